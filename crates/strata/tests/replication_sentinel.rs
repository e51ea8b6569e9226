//! Automatic failover by Debian's real redis-sentinel 7.0: three sentinels monitor a
//! Strata primary and two Strata replicas; the primary is killed with SIGKILL while a
//! client writes; the sentinels promote a replica (REPLICAOF NO ONE, CONFIG REWRITE,
//! CLIENT KILL in a transaction), point the other at it, and answer the new address. Every
//! write both replicas acknowledged (WAIT 2) before the kill is on the new primary.

mod common;
mod rdb_common;
mod repl_common;

use common::{free_port, temp_dir, Proc};
use rdb_common::{assert_same_values, populate};
use repl_common::{kill9, replicaof, run, wait_acks, wait_synced, wait_until};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MASTER: &str = "mymaster";

/// A Strata server started from a config file of its own (CONFIG REWRITE, which Sentinel
/// sends to the replica it promotes, needs one).
fn strata_with_config(dir: &std::path::Path) -> Proc {
    std::fs::create_dir_all(dir).expect("create dir");
    let conf = dir.join("strata.conf");
    std::fs::write(&conf, "repl-diskless-sync-delay 0\n").expect("write config");
    let data = dir.join("data");
    common::strata(&[
        conf.to_str().expect("utf-8 path"),
        "--dir",
        data.to_str().expect("utf-8 path"),
    ])
}

/// A redis-sentinel process, killed (and its directory removed) when dropped.
struct Sentinel {
    port: u16,
    child: Child,
    dir: PathBuf,
}

impl Sentinel {
    fn start(primary_port: u16) -> Sentinel {
        let port = free_port();
        let dir = temp_dir("sentinel");
        std::fs::create_dir_all(&dir).expect("create dir");
        let conf = dir.join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nlogfile {}\n\
             sentinel monitor {MASTER} 127.0.0.1 {primary_port} 2\n\
             sentinel down-after-milliseconds {MASTER} 1000\n\
             sentinel failover-timeout {MASTER} 10000\n\
             sentinel parallel-syncs {MASTER} 1\n",
            dir.display(),
            dir.join("sentinel.log").display()
        );
        std::fs::write(&conf, text).expect("write sentinel config");
        let child = Command::new("redis-sentinel")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("redis-sentinel is required (apt-get install -y redis-sentinel): {e}")
            });
        let s = Sentinel { port, child, dir };
        wait_until("a sentinel to listen", 10, || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        s
    }

    fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .expect("connect to a sentinel")
    }

    /// SENTINEL get-master-addr-by-name: the port it names.
    fn primary_port(&self) -> u16 {
        let addr: Vec<String> = run(
            &mut self.client(),
            &["SENTINEL", "get-master-addr-by-name", MASTER],
        );
        addr.get(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("get-master-addr-by-name: {addr:?}"))
    }

    /// How many replicas and other sentinels it knows of.
    fn known(&self) -> (usize, usize) {
        let mut c = self.client();
        let replicas: Vec<redis::Value> = run(&mut c, &["SENTINEL", "replicas", MASTER]);
        let sentinels: Vec<redis::Value> = run(&mut c, &["SENTINEL", "sentinels", MASTER]);
        (replicas.len(), sentinels.len())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sentinel.log")).unwrap_or_default()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// INFO errorstats, read on a raw connection (which sends nothing else).
fn errorstats(p: &Proc) -> String {
    let mut c = common::RespConn::new(p);
    common::call_text(&mut c, &["INFO", "errorstats"])
}

#[test]
fn sentinel_promotes_a_replica_when_the_primary_dies() {
    let dirs: Vec<PathBuf> = (0..3).map(|_| temp_dir("node")).collect();
    let p = strata_with_config(&dirs[0]);
    let mut replicas: Vec<Proc> = dirs[1..].iter().map(|d| strata_with_config(d)).collect();
    let mut pc = p.client();
    populate(&mut pc, false);
    for r in &replicas {
        replicaof(&mut r.client(), &p);
        wait_synced(&mut pc, &mut r.client());
    }
    let sentinels: Vec<Sentinel> = (0..3).map(|_| Sentinel::start(p.port)).collect();
    wait_until(
        "the sentinels to find both replicas and each other",
        60,
        || sentinels.iter().all(|s| s.known() == (2, 2)),
    );
    for s in &sentinels {
        let ok: String = run(&mut s.client(), &["SENTINEL", "ckquorum", MASTER]);
        assert!(ok.starts_with("OK"), "{ok}");
    }

    // A client writes, each write waiting for both replicas, until the primary dies.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let mut c = p.client();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut acked = Vec::new();
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let key = format!("acked:{i}");
                if redis::cmd("SET")
                    .arg(&key)
                    .arg(i)
                    .query::<()>(&mut c)
                    .is_err()
                {
                    break;
                }
                match redis::cmd("WAIT").arg(2).arg(1000).query::<i64>(&mut c) {
                    Ok(2) => acked.push(key),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            acked
        })
    };
    wait_until("acknowledged writes", 30, || {
        let n: i64 = run(&mut p.client(), &["DBSIZE"]);
        n > 200
    });
    // The errors the replicas answered so far (the test's own clients get two each: the
    // redis crate sends CLIENT SETINFO, which Redis 7.0 does not know either).
    let errors_before: Vec<String> = replicas.iter().map(errorstats).collect();
    kill9(&p);
    stop.store(true, Ordering::Relaxed);
    let acked = writer.join().expect("writer thread");
    assert!(acked.len() > 50, "only {} writes acknowledged", acked.len());

    // The sentinels agree on a new primary: one of the replicas.
    let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();
    wait_until("the sentinels to promote a replica", 60, || {
        sentinels.iter().all(|s| ports.contains(&s.primary_port()))
    });
    let new_port = sentinels[0].primary_port();
    let logs: String = sentinels.iter().map(Sentinel::log).collect();
    assert!(logs.contains("+switch-master"), "{logs}");
    let at = ports
        .iter()
        .position(|&x| x == new_port)
        .expect("a replica");
    let other = replicas.remove(1 - at);
    let new = replicas.remove(0);
    // Everything the sentinels sent (INFO, PING, hello messages, the failover's
    // transaction, CONFIG REWRITE, CLIENT KILL ...) was answered without an error.
    let errors_after: Vec<String> = [&new, &other].into_iter().map(errorstats).collect();
    let mut expected = errors_before.clone();
    if at == 1 {
        expected.swap(0, 1);
    }
    assert_eq!(
        errors_after, expected,
        "errors answered during the failover"
    );
    let (mut nc, mut oc) = (new.client(), other.client());
    assert_eq!(repl_common::field(&mut nc, "replication", "role"), "master");
    // Every acknowledged write is on the new primary.
    for key in &acked {
        let v: Option<String> = run(&mut nc, &["GET", key]);
        assert!(v.is_some(), "{key} was acknowledged but is lost");
    }
    // The other replica follows the new primary (the sentinels told it to) and converges.
    wait_until("the other replica to follow the new primary", 60, || {
        let i = repl_common::info(&mut oc, "replication");
        i.get("master_port") == Some(&new_port.to_string())
            && i.get("master_link_status").map(String::as_str) == Some("up")
    });
    let _: () = run(&mut nc, &["SET", "after-failover", "1"]);
    assert_eq!(wait_acks(&mut nc, 1, 10_000), 1);
    wait_synced(&mut nc, &mut oc);
    assert_same_values(&mut nc, &mut oc, false);
    // The promoted server's config file was rewritten: no replicaof line left in it.
    let conf = std::fs::read_to_string(dirs[1 + at].join("strata.conf")).expect("config");
    assert!(!conf.contains("replicaof"), "{conf}");
    let conf = std::fs::read_to_string(dirs[2 - at].join("strata.conf")).expect("config");
    assert!(
        conf.contains(&format!("replicaof \"127.0.0.1\" \"{new_port}\"")),
        "{conf}"
    );
    drop((new, other, p));
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}
