//! Links that break: a replica whose link to its primary is killed continues with a
//! partial resynchronization from the primary's backlog (PSYNC, +CONTINUE), or a full one
//! when the backlog no longer holds where it was; a replica killed with SIGKILL and
//! restarted on its data directory resynchronizes and holds every acknowledged write.
//! Against a Strata primary and a redis-server one.

mod common;
mod rdb_common;
mod repl_common;

use common::{serve_in, temp_dir, Proc};
use rdb_common::{assert_same_values, populate};
use repl_common::{
    kill9, number, redis, replicaof, run, strata, wait_acks, wait_synced, wait_until, write_mix,
};

/// How a replica loses its primary's stream for a while.
#[derive(Clone, Copy)]
enum Break {
    /// CLIENT KILL TYPE master on the replica: the link reconnects at once.
    KillLink,
    /// REPLICAOF NO ONE, then REPLICAOF the primary again once the writes are done.
    Detach,
}

/// Breaks the replica's stream, writes on the primary meanwhile, and checks the replica
/// continued partially (or fully, with `expect_partial` false) with the same data.
fn break_and_resume(p: &Proc, r: &Proc, how: Break, writes: usize, expect_partial: bool) {
    let (mut pc, mut rc) = (p.client(), r.client());
    let ok = number(&mut pc, "stats", "sync_partial_ok");
    let full = number(&mut pc, "stats", "sync_full");
    match how {
        Break::KillLink => {
            let killed: i64 = run(&mut rc, &["CLIENT", "KILL", "TYPE", "master"]);
            assert_eq!(killed, 1, "the replica's link to its primary");
        }
        Break::Detach => {
            let _: () = run(&mut rc, &["REPLICAOF", "NO", "ONE"]);
        }
    }
    write_mix(&mut pc, &format!("gap{writes}"), writes);
    if let Break::Detach = how {
        replicaof(&mut rc, p);
    }
    assert_eq!(wait_acks(&mut pc, 1, 20_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    let (partial, fulls) = if expect_partial { (1, 0) } else { (0, 1) };
    assert_eq!(number(&mut pc, "stats", "sync_partial_ok"), ok + partial);
    assert_eq!(number(&mut pc, "stats", "sync_full"), full + fulls);
}

#[test]
fn partial_resync_after_link_killed() {
    let p = strata(&[]);
    let r = strata(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    populate(&mut pc, true);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    write_mix(&mut pc, "first", 10);
    break_and_resume(&p, &r, Break::KillLink, 10, true);
    // And again: a partial resync leaves the replica able to continue partially.
    break_and_resume(&p, &r, Break::KillLink, 5, true);
    // As with Redis, a replica promoted and then turned back into a replica syncs fully:
    // it asks for its own new history, which its primary does not know.
    break_and_resume(&p, &r, Break::Detach, 5, false);
}

/// Stops the replica cleanly, writes on the primary meanwhile, restarts it on its data
/// directory (configured as a replica) and checks how it resynchronized.
fn restart_and_resume(backlog: &str, writes: usize, expect_partial: bool) {
    let p = strata(&["--repl-backlog-size", backlog]);
    let mut pc = p.client();
    populate(&mut pc, true);
    let dir = temp_dir("replica");
    let of = format!("127.0.0.1 {}", p.port);
    let args = ["--repl-diskless-sync-delay", "0", "--replicaof", &of];
    let mut r = serve_in(&dir, &args);
    let mut rc = r.client();
    wait_synced(&mut pc, &mut rc);
    write_mix(&mut pc, "synced", 5);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    r.terminate();
    assert!(
        r.wait_exit(std::time::Duration::from_secs(20)),
        "replica never stopped; its log:\n{}",
        r.log.lock().unwrap().join("\n")
    );
    drop(r);
    let ok = number(&mut pc, "stats", "sync_partial_ok");
    let full = number(&mut pc, "stats", "sync_full");
    write_mix(&mut pc, "while-down", writes);
    let r = serve_in(&dir, &args);
    let mut rc = r.client();
    assert_eq!(wait_acks(&mut pc, 1, 20_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    let (partial, fulls) = if expect_partial { (1, 0) } else { (0, 1) };
    assert_eq!(number(&mut pc, "stats", "sync_partial_ok"), ok + partial);
    assert_eq!(number(&mut pc, "stats", "sync_full"), full + fulls);
    drop(r);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A replica asleep in DEBUG SLEEP resumes its link only when it wakes, as a Redis replica
/// (whose whole server sleeps) does: the primary's writes meanwhile overran its backlog,
/// so the resync is a full one.
#[test]
fn a_debug_sleep_holds_the_replicas_link() {
    let p = strata(&["--repl-backlog-size", "16kb"]);
    let r = strata(&["--enable-debug-command", "yes"]);
    let (mut pc, mut rc) = (p.client(), r.client());
    populate(&mut pc, true);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    let port = p.port;
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .expect("connect to the primary");
        let value = "x".repeat(1024);
        for i in 0..64 {
            let _: () = run(&mut c, &["SET", &format!("during-sleep:{i}"), &value]);
        }
    });
    let _: () = run(&mut rc, &["MULTI"]);
    let _: String = run(&mut rc, &["CLIENT", "KILL", "TYPE", "master"]);
    let _: String = run(&mut rc, &["DEBUG", "SLEEP", "1"]);
    let _: redis::Value = run(&mut rc, &["EXEC"]);
    writer.join().expect("the writer");
    wait_synced(&mut pc, &mut rc);
    assert_eq!(number(&mut pc, "stats", "sync_partial_err"), 1);
    assert_eq!(number(&mut pc, "stats", "sync_partial_ok"), 0);
    assert_same_values(&mut pc, &mut rc, true);
}

#[test]
fn restarted_replica_resumes_partially() {
    restart_and_resume("1mb", 5, true);
}

#[test]
fn full_resync_when_backlog_overrun() {
    // The smallest backlog Redis allows: the writes while the replica is down overrun it.
    restart_and_resume("16kb", 100, false);
}

#[test]
fn strata_resyncs_partially_from_redis_server() {
    let p = redis(&[]);
    let r = strata(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    populate(&mut pc, true);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    break_and_resume(&p, &r, Break::KillLink, 10, true);
}

#[test]
fn redis_server_resyncs_partially_from_strata() {
    let p = strata(&[]);
    let r = redis(&[]);
    let (mut pc, mut rc) = (p.client(), r.client());
    populate(&mut pc, true);
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    break_and_resume(&p, &r, Break::KillLink, 10, true);
}

#[test]
fn killed_replica_restarts_with_every_acknowledged_write() {
    let p = strata(&[]);
    let mut pc = p.client();
    populate(&mut pc, true);
    let dir = temp_dir("replica");
    let r = serve_in(&dir, repl_common::FAST_SYNC);
    let mut rc = r.client();
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    // Writes the replica acknowledged, one WAIT each: all must survive its SIGKILL.
    for i in 0..50 {
        let _: () = run(&mut pc, &["SET", &format!("acked:{i}"), &i.to_string()]);
        assert_eq!(wait_acks(&mut pc, 1, 10_000), 1, "write {i} unacknowledged");
    }
    kill9(&r);
    drop(r);
    // The primary goes on meanwhile.
    write_mix(&mut pc, "while-down", 10);
    let r = serve_in(&dir, repl_common::FAST_SYNC);
    let mut rc = r.client();
    // Restarted, the replica holds what it had acknowledged before it resynchronizes.
    for i in 0..50 {
        let v: Option<String> = run(&mut rc, &["GET", &format!("acked:{i}")]);
        assert_eq!(v, Some(i.to_string()), "acked:{i} after the restart");
    }
    replicaof(&mut rc, &p);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    write_mix(&mut pc, "after", 5);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    drop(r);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replica_link_waits_for_a_primary_that_comes_later() {
    // REPLICAOF a port nobody listens on yet: the replica keeps trying, serving its data.
    let port = common::free_port();
    let r = strata(&[]);
    let mut rc = r.client();
    let _: () = run(&mut rc, &["SET", "stale", "1"]);
    let _: () = run(&mut rc, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
    wait_until("the replica to try its primary", 10, || {
        repl_common::field(&mut rc, "replication", "master_link_status") == "down"
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let stale: String = run(&mut rc, &["GET", "stale"]);
    assert_eq!(stale, "1");
    let late = LateRedis::start(port);
    let mut pc = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(std::time::Duration::from_secs(5)))
        .expect("connect to the late primary");
    let _: () = run(&mut pc, &["SET", "fresh", "2"]);
    wait_synced(&mut pc, &mut rc);
    let fresh: String = run(&mut rc, &["GET", "fresh"]);
    assert_eq!(fresh, "2");
    let gone: i64 = run(&mut rc, &["EXISTS", "stale"]);
    assert_eq!(gone, 0);
    drop(late);
}

/// redis-server on a port chosen before it starts, killed when dropped.
struct LateRedis(std::process::Child, std::path::PathBuf);

impl LateRedis {
    fn start(port: u16) -> LateRedis {
        let dir = temp_dir("late");
        std::fs::create_dir_all(&dir).expect("create dir");
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("redis-server is required (apt-get install -y redis-server): {e}")
            });
        let late = LateRedis(child, dir);
        wait_until("the late primary to listen", 10, || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        late
    }
}

impl Drop for LateRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}
