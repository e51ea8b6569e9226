//! Real clients against the real binary: the `redis` crate, redis-cli, redis-py and
//! redis-benchmark, plus the connection and server commands they lean on.

mod common;

use common::RespConn;

use redis::{Commands, Value};
use std::process::Command;
use std::time::{Duration, Instant};

fn tool(name: &str, args: &[&str]) -> String {
    let out = Command::new(name)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{name} is required (apt-get install -y redis-tools): {e}"));
    assert!(
        out.status.success(),
        "{name} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines().find_map(|l| {
        l.strip_prefix(&format!("{name}:"))
            .map(|v| v.trim().to_string())
    })
}

#[test]
fn redis_crate_handshake_and_basics() {
    let s = common::strata(&[]);
    let mut c = s.client();
    let _: () = c.set("k", "v").unwrap();
    let v: String = c.get("k").unwrap();
    assert_eq!(v, "v");
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut c).unwrap();
    assert!(id > 0);
    let _: () = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg("rust")
        .query(&mut c)
        .unwrap();
    let name: String = redis::cmd("CLIENT").arg("GETNAME").query(&mut c).unwrap();
    assert_eq!(name, "rust");
    // HELLO 3 switches this connection to RESP3: a map reply with proto 3.
    let hello: Value = redis::cmd("HELLO").arg(3).query(&mut c).unwrap();
    let text = format!("{hello:?}");
    assert!(
        text.contains("proto") && text.contains("int(3)") || text.contains("Int(3)"),
        "{text}"
    );
}

#[test]
fn redis_cli_interactive_features() {
    let s = common::strata(&[]);
    let port = s.port.to_string();
    let p = ["-p", port.as_str()];
    assert_eq!(
        tool("redis-cli", &[&p[..], &["set", "a", "1"]].concat()).trim(),
        "OK"
    );
    // Piped (not a tty), redis-cli prints replies raw.
    assert_eq!(
        tool("redis-cli", &[&p[..], &["-3", "get", "a"]].concat()).trim(),
        "1"
    );
    let hello = tool("redis-cli", &[&p[..], &["-3", "hello", "3"]].concat());
    assert!(hello.contains("proto 3"), "{hello}");
    for i in 0..50 {
        tool(
            "redis-cli",
            &[&p[..], &["set", &format!("scan:{i}"), "x"]].concat(),
        );
    }
    let scanned = tool(
        "redis-cli",
        &[&p[..], &["--scan", "--pattern", "scan:*"]].concat(),
    );
    let mut keys: Vec<&str> = scanned.lines().collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 50);
    let info = tool("redis-cli", &[&p[..], &["info"]].concat());
    assert_eq!(
        info_field(&info, "db0").as_deref(),
        Some("keys=51,expires=0,avg_ttl=0")
    );
    assert!(info_field(&info, "connected_clients").is_some());
    assert!(info_field(&info, "used_memory").is_some_and(|m| m.parse::<u64>().unwrap() > 0));
    // --stat prints a line per interval from INFO, only to a terminal: give it one with
    // script(1) and let timeout(1) stop it.
    let out = Command::new("timeout")
        .args(["1", "script", "-qc"])
        .arg(format!("redis-cli -p {port} --stat -i 0.2"))
        .arg("/dev/null")
        .output()
        .expect("timeout and script (coreutils, bsdutils) are required");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("keys") && text.contains("51"),
        "redis-cli --stat printed: {text}"
    );
}

#[test]
fn redis_py_client() {
    let s = common::strata(&[]);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/clients/redis_py_check.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .arg(s.port.to_string())
        .output()
        .expect("python3 is required");
    assert!(
        out.status.success(),
        "redis-py check failed (needs `pip install redis`):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn redis_benchmark_default_string_tests_run_clean() {
    let s = common::strata(&[]);
    let port = s.port.to_string();
    let out = tool(
        "redis-benchmark",
        &[
            "-p",
            &port,
            "-q",
            "-n",
            "2000",
            "-c",
            "10",
            "-t",
            "ping,set,get,incr,mset",
            "--csv",
        ],
    );
    // One CSV row per test; a test with errors makes redis-benchmark print them instead.
    for t in ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET"] {
        assert!(out.contains(&format!("\"{t}")), "no result for {t}:\n{out}");
    }
    let mut c = s.client();
    let counter: i64 = c.get("counter:__rand_int__").unwrap();
    assert_eq!(counter, 2000, "INCR ran 2000 times on one key");
}

#[test]
fn concurrent_increments_across_threads_lose_nothing() {
    let s = common::strata(&["--threads", "4"]);
    let clients = 8;
    let per = 500;
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let url = s.url();
            std::thread::spawn(move || {
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                for i in 0..per {
                    let _: i64 = c.incr("shared", 1).unwrap();
                    let _: i64 = c.incr(format!("k{}", i % 7), 1).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut c = s.client();
    let total: i64 = c.get("shared").unwrap();
    assert_eq!(total, clients * per);
    let spread: i64 = (0..7)
        .map(|i| c.get::<_, i64>(format!("k{i}")).unwrap())
        .sum();
    assert_eq!(spread, clients * per);
}

#[test]
fn client_list_kill_reply_and_no_touch() {
    let s = common::strata(&["--enable-debug-command", "yes"]);
    let mut a = s.client();
    let mut b = s.client();
    let b_id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut b).unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut a).unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.contains(&format!("id={b_id} ")));
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(b_id)
        .query(&mut a)
        .unwrap();
    assert_eq!(killed, 1);
    assert!(
        redis::cmd("PING").query::<String>(&mut b).is_err(),
        "killed client still served"
    );
    let gone = Instant::now();
    loop {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut a).unwrap();
        if list.lines().count() == 1 {
            break;
        }
        assert!(
            gone.elapsed() < Duration::from_secs(5),
            "killed client still listed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // CLIENT REPLY OFF/SKIP over one raw connection: only the unsuppressed replies arrive.
    let mut raw = s.raw();
    let req = b"CLIENT REPLY SKIP\r\nSET x 1\r\nGET x\r\nCLIENT REPLY OFF\r\nGET x\r\nCLIENT REPLY ON\r\nGET x\r\n";
    let got = common::roundtrip(&mut raw, req, 16);
    assert_eq!(got, b"$1\r\n1\r\n+OK\r\n$1\r\n1\r\n");

    // CLIENT NO-TOUCH: reads stop refreshing the key's idle time.
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(1)
        .query(&mut a)
        .unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("NO-TOUCH")
        .arg("ON")
        .query(&mut a)
        .unwrap();
    let flags: String = redis::cmd("CLIENT").arg("INFO").query(&mut a).unwrap();
    assert!(flags.contains("flags=T"), "{flags}");
}

/// The fields of a CLIENT LIST/INFO line that do not depend on addresses, times or
/// memory: as redis-server gives them, in the same states.
fn client_fields(line: &str) -> Vec<(String, String)> {
    const SAME: &[&str] = &[
        "flags", "db", "sub", "psub", "ssub", "multi", "qbuf", "obl", "oll", "omem", "events",
        "cmd", "user", "redir", "resp",
    ];
    line.split_whitespace()
        .filter_map(|f| f.split_once('='))
        .filter(|(k, _)| SAME.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// CLIENT INFO and CLIENT LIST ID as another client sees it: plain, in a transaction with
/// queued commands, with a watched key modified, subscribed. qbuf counts the request being
/// run (26 bytes for CLIENT INFO), as Redis's query buffer does.
#[test]
fn client_list_fields_as_redis_gives_them() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let lines = |p: &common::Proc| -> Vec<Vec<(String, String)>> {
        let mut a = RespConn::new(p);
        let mut b = RespConn::new(p);
        let text = |r: common::RawReply| {
            let raw = String::from_utf8_lossy(&r.raw).into_owned();
            raw.split_once("\r\n")
                .map(|(_, t)| t.to_string())
                .unwrap_or(raw)
        };
        let id = String::from_utf8_lossy(&b.call(&["CLIENT", "ID"]).unwrap().raw)
            .trim_start_matches(':')
            .trim()
            .to_string();
        let of_b = |a: &mut RespConn| {
            client_fields(&text(a.call(&["CLIENT", "LIST", "ID", &id]).unwrap()))
        };
        let mut out = vec![client_fields(&text(b.call(&["CLIENT", "INFO"]).unwrap()))];
        b.call(&["SELECT", "3"]).unwrap();
        b.call(&["SET", "w", "1"]).unwrap();
        b.call(&["WATCH", "w"]).unwrap();
        a.call(&["SELECT", "3"]).unwrap();
        a.call(&["SET", "w", "2"]).unwrap();
        out.push(of_b(&mut a));
        b.call(&["MULTI"]).unwrap();
        b.call(&["SET", "k", "v"]).unwrap();
        b.call(&["GET", "k"]).unwrap();
        out.push(of_b(&mut a));
        b.call(&["EXEC"]).unwrap();
        out.push(of_b(&mut a));
        b.call(&["SUBSCRIBE", "ch"]).unwrap();
        out.push(of_b(&mut a));
        out
    };
    let want = lines(&redis);
    assert_eq!(
        want[0]
            .iter()
            .find(|(k, _)| k == "qbuf")
            .map(|(_, v)| v.as_str()),
        Some("26")
    );
    assert_eq!(lines(&strata), want);
}

#[test]
fn config_set_takes_effect_and_info_counts() {
    let s = common::strata(&[]);
    let mut c = s.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxclients")
        .arg("3")
        .query(&mut c)
        .unwrap();
    let _keep: Vec<_> = (0..2).map(|_| s.client()).collect();
    let mut raw = s.raw();
    let got = common::roundtrip(&mut raw, b"PING\r\n", 36);
    assert_eq!(got, b"-ERR max number of clients reached\r\n");

    let _: () = c.set("hit", 1).unwrap();
    let _: Option<String> = c.get("hit").unwrap();
    let _: Option<String> = c.get("miss").unwrap();
    let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert_eq!(info_field(&info, "keyspace_hits").as_deref(), Some("1"));
    assert_eq!(info_field(&info, "keyspace_misses").as_deref(), Some("1"));
    let cmdstats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut c)
        .unwrap();
    assert!(cmdstats.contains("cmdstat_get:calls=2,"), "{cmdstats}");
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
    let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert_eq!(info_field(&info, "keyspace_hits").as_deref(), Some("0"));
}

#[test]
fn active_expiry_frees_untouched_keys() {
    let s = common::strata(&["--hz", "50"]);
    let mut c = s.client();
    for i in 0..200 {
        let _: () = redis::cmd("SET")
            .arg(format!("t{i}"))
            .arg("v")
            .arg("PX")
            .arg(100)
            .query(&mut c)
            .unwrap();
    }
    let _: () = c.set("stays", "v").unwrap();
    std::thread::sleep(Duration::from_millis(600));
    // DBSIZE counts keys without touching them, so only the active cycle can have removed them.
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 1);
    let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert_eq!(info_field(&info, "expired_keys").as_deref(), Some("200"));
}

#[test]
fn lazy_expiry_when_active_cycle_is_off() {
    let s = common::strata(&["--enable-debug-command", "yes"]);
    let mut c = s.client();
    common::active_expire_off(&mut c);
    let _: () = redis::cmd("SET")
        .arg("gone")
        .arg("v")
        .arg("PX")
        .arg(50)
        .query(&mut c)
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 1, "still stored: nothing has touched it");
    let v: Option<String> = c.get("gone").unwrap();
    assert_eq!(v, None);
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0, "the read removed it");
}

#[test]
fn shutdown_stops_the_process() {
    let mut s = common::strata(&[]);
    let mut raw = s.raw();
    let got = common::roundtrip(&mut raw, b"SHUTDOWN NOSAVE\r\n", 1);
    assert!(
        got.is_empty(),
        "SHUTDOWN replied {:?}",
        String::from_utf8_lossy(&got)
    );
    assert!(
        s.wait_exit(Duration::from_secs(5)),
        "server still running after SHUTDOWN"
    );
}

#[test]
fn config_file_and_options_like_redis_server() {
    let dir = std::env::temp_dir().join(format!("strata-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("strata.conf");
    std::fs::write(
        &conf,
        "# test config\nhz 33\nrequirepass \"from file\"\ndatabases 4\n",
    )
    .unwrap();
    let s = common::strata(&[
        conf.to_str().unwrap(),
        "--requirepass",
        "override",
        "--maxmemory",
        "1mb",
    ]);
    let mut raw = s.raw();
    assert_eq!(
        common::roundtrip(&mut raw, b"GET a\r\n", 34),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        common::roundtrip(&mut raw, b"AUTH override\r\n", 5),
        b"+OK\r\n"
    );
    let got = common::roundtrip(&mut raw, b"CONFIG GET hz\r\n", 19);
    assert_eq!(got, b"*2\r\n$2\r\nhz\r\n$2\r\n33\r\n");
    let got = common::roundtrip(&mut raw, b"CONFIG GET maxmemory\r\n", 32);
    assert_eq!(got, b"*2\r\n$9\r\nmaxmemory\r\n$7\r\n1048576\r\n");
    let got = common::roundtrip(&mut raw, b"SELECT 4\r\n", 30);
    assert_eq!(got, b"-ERR DB index is out of range\r\n");
    std::fs::remove_dir_all(&dir).ok();
}

fn vm_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn replies_to_a_client_that_does_not_read_stay_bounded_by_maxmemory_clients() {
    // Redis buffers every reply of a client without an output limit (`normal 0 0 0`), and
    // so does Strata; what bounds them is `maxmemory-clients`, which evicts the client.
    use std::io::{Read, Write};
    let s = common::strata(&["--threads", "1", "--maxmemory-clients", "32mb"]);
    let value = vec![b'v'; 100 * 1024];
    let mut c = s.client();
    let _: () = c.set("big", &value).unwrap();
    let before = vm_rss_kb(s.pid());
    // 3000 pipelined GETs would be ~300 MB of replies if they were all buffered.
    let gets = 3000;
    let mut raw = s.raw();
    raw.write_all(&b"GET big\r\n".repeat(gets)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let during = vm_rss_kb(s.pid());
    assert!(
        during < before + 96 * 1024,
        "server RSS grew from {before} kB to {during} kB while the client did not read"
    );
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    let reply_len = format!("${}\r\n", value.len()).len() + value.len() + 2;
    assert!(
        got.len() < reply_len * gets,
        "evicted before all its replies"
    );
    let evicted: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(evicted.contains("evicted_clients:1"), "{evicted}");
}

/// Scheduling policy (field 41 of /proc/PID/task/TID/stat) of each `strata-worker-*`
/// thread: 0 SCHED_OTHER, 3 SCHED_BATCH.
#[cfg(target_os = "linux")]
fn worker_policies(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("task dir") {
        let dir = task.expect("task entry").path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with("strata-worker") {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).expect("stat");
        let after_comm = stat.rsplit_once(')').expect("stat has a comm").1;
        let policy = after_comm
            .split_whitespace()
            .nth(41 - 3)
            .expect("policy field");
        out.push(policy.parse().expect("numeric policy"));
    }
    out
}

#[cfg(target_os = "linux")]
#[test]
fn worker_threads_run_sched_batch_unless_told_otherwise() {
    for (args, want) in [(&[][..], 3), (&["--worker-sched", "normal"][..], 0)] {
        let mut all = args.to_vec();
        all.extend(["--threads", "2"]);
        let p = common::strata(&all);
        let mut c = p.client();
        let _: String = redis::cmd("PING").query(&mut c).expect("ping");
        // Workers set their policy as they start; the log line may come first.
        let deadline = Instant::now() + Duration::from_secs(5);
        let seen = loop {
            let seen = worker_policies(p.pid());
            if (seen.len() == 2 && seen.iter().all(|&x| x == want)) || Instant::now() > deadline {
                break seen;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(seen, vec![want; 2], "worker policies with {args:?}");
        let got: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("worker-sched")
            .query(&mut c)
            .expect("config get");
        let name = if want == 3 { "batch" } else { "normal" };
        assert_eq!(got, vec!["worker-sched".to_string(), name.to_string()]);
    }
}

/// INFO stats `strata_connections_moved`.
fn connections_moved(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    info_field(&info, "strata_connections_moved")
        .and_then(|v| v.parse().ok())
        .expect("strata_connections_moved")
}

/// Waits up to 20 s for a connection to move, lets the load run `after` longer, then tells
/// its threads to `stop`.
fn until_a_move(
    admin: &mut redis::Connection,
    stop: &std::sync::atomic::AtomicBool,
    after: Duration,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while connections_moved(admin) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(after);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Pipelines over keys spread across shards keep their connections where they are, however
/// often their batches wait for a shard: only a batch that locked one shard alone moves.
#[test]
fn connections_on_spread_keys_stay_on_their_worker() {
    let p = common::strata(&["--threads", "2", "--appendonly", "no", "--save", ""]);
    let mut admin = p.client();
    const CONNS: u64 = 8;
    const BATCH: u64 = 32;
    const BATCHES: u64 = 300;
    std::thread::scope(|s| {
        for i in 0..CONNS {
            let p = &p;
            s.spawn(move || {
                let mut c = common::RespConn::new(p);
                let mut rng = common::Rng(i + 1);
                for _ in 0..BATCHES {
                    let mut batch = Vec::new();
                    for _ in 0..BATCH {
                        let key = format!("k{}", rng.next() % 1000);
                        batch.extend(common::encode_command(&["INCR", &key]));
                    }
                    c.send(&batch).unwrap();
                    for _ in 0..BATCH {
                        assert_eq!(c.read().unwrap().kind, b':');
                    }
                }
            });
        }
    });
    assert_eq!(connections_moved(&mut admin), 0);
    // Every INCR landed once: the counters add up to the commands sent.
    let keys: Vec<String> = admin.keys("k*").unwrap();
    let sum: u64 = keys.iter().map(|k| admin.get::<_, u64>(k).unwrap()).sum();
    assert_eq!(sum, CONNS * BATCHES * BATCH);
}

/// Connections that take turns on one key, one command at a time, never wait for its lock,
/// yet its data crosses cores with each turn: the connections on the other worker move to
/// the key's worker, once each, and stay there.
#[test]
fn connections_taking_turns_on_one_key_move_once_to_its_worker() {
    let p = common::strata(&["--threads", "2", "--appendonly", "no", "--save", ""]);
    let mut admin = p.client();
    // Accepted in turn by the two workers: both serve some of them.
    let mut conns: Vec<redis::Connection> = (0..4).map(|_| p.client()).collect();
    let mut turns = |n: usize| {
        for _ in 0..n {
            for c in conns.iter_mut() {
                let _: i64 = c.incr("turns", 1).unwrap();
            }
        }
    };
    turns(50);
    let moved = connections_moved(&mut admin);
    assert!(
        (1..=2).contains(&moved),
        "{moved} moves: the other worker's two connections move, once each"
    );
    turns(200);
    assert_eq!(connections_moved(&mut admin), moved, "and stay");
    let total: u64 = admin.get("turns").unwrap();
    assert_eq!(total, 4 * 250);
}

/// Connections whose pipelines all contend for one key move to one worker
/// (`strata_connections_moved`), and a moved connection keeps what it set up: its name,
/// its database, its protocol. No command is lost or run twice on the way.
#[test]
fn connections_on_one_hot_key_move_to_one_worker_with_their_state() {
    let p = common::strata(&["--threads", "2", "--appendonly", "no", "--save", ""]);
    let mut admin = p.client();
    let moved = connections_moved;
    assert_eq!(moved(&mut admin), 0);
    const CONNS: usize = 8;
    const BATCH: usize = 32;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let pushed: Vec<usize> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..CONNS)
            .map(|i| {
                let (p, stop) = (&p, &stop);
                s.spawn(move || {
                    let mut c = common::RespConn::new(p);
                    let name = format!("conn-{i}");
                    let proto = if i % 2 == 0 { "2" } else { "3" };
                    assert_eq!(c.call(&["CLIENT", "SETNAME", &name]).unwrap().kind, b'+');
                    assert_eq!(c.call(&["SELECT", "5"]).unwrap().kind, b'+');
                    assert_ne!(c.call(&["HELLO", proto]).unwrap().kind, b'-');
                    let batch = common::encode_command(&["RPUSH", "hot", "x"]).repeat(BATCH);
                    let mut sent = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        c.send(&batch).unwrap();
                        for _ in 0..BATCH {
                            assert_eq!(c.read().unwrap().kind, b':');
                        }
                        sent += BATCH;
                    }
                    // After any move: the same name, database and protocol.
                    let info = c.call(&["CLIENT", "INFO"]).unwrap();
                    let info = String::from_utf8_lossy(&info.raw).into_owned();
                    let fields: Vec<&str> = info.split_whitespace().collect();
                    for want in [
                        format!("name={name}"),
                        "db=5".into(),
                        format!("resp={proto}"),
                    ] {
                        assert!(fields.contains(&want.as_str()), "{want} not in {info}");
                    }
                    sent
                })
            })
            .collect();
        // Keep going a little after the first move, so moved connections run on.
        until_a_move(&mut admin, &stop, Duration::from_millis(300));
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(moved(&mut admin) > 0, "no connection moved in 20 s");
    let total: usize = pushed.iter().sum();
    redis::cmd("SELECT").arg(5).query::<()>(&mut admin).unwrap();
    let len: usize = admin.llen("hot").unwrap();
    assert_eq!(len, total, "pushes acknowledged against the list's length");
}

/// With `worker-placement balanced` (the default), clients opened one at a time at low load
/// share the first worker; under load from several of them at once some move to the idle
/// worker, and once the load has passed, those that go on sending move back, a few at a
/// time (`net::balance`). Nothing sent meanwhile is lost.
#[test]
fn connections_spread_under_load_and_gather_again_after_it() {
    let p = common::strata(&[
        "--threads",
        "2",
        "--worker-placement",
        "balanced",
        "--appendonly",
        "no",
        "--save",
        "",
    ]);
    let mut admin = p.client();
    const CONNS: usize = 6;
    let mut conns: Vec<common::RespConn> = (0..CONNS)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(10));
            common::RespConn::new(&p)
        })
        .collect();
    for c in conns.iter_mut() {
        assert_eq!(c.call(&["PING"]).unwrap().raw, b"+PONG\r\n");
    }
    assert_eq!(connections_moved(&mut admin), 0, "at low load, none moves");
    // Load: every connection pipelines INCRs over keys spread across shards.
    const BATCH: usize = 64;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let sent: usize = std::thread::scope(|s| {
        let stop = &stop;
        let workers: Vec<_> = conns
            .iter_mut()
            .enumerate()
            .map(|(i, c)| {
                s.spawn(move || {
                    let batch: Vec<u8> = (0..BATCH)
                        .flat_map(|j| common::encode_command(&["INCR", &format!("k{i}:{j}")]))
                        .collect();
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        c.send(&batch).unwrap();
                        for _ in 0..BATCH {
                            assert_eq!(c.read().unwrap().kind, b':');
                        }
                        n += BATCH;
                    }
                    n
                })
            })
            .collect();
        until_a_move(&mut admin, stop, Duration::from_millis(200));
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let spread = connections_moved(&mut admin);
    assert!(spread > 0, "no connection moved under load in 20 s");
    // Light load: a PING from each connection every 10 ms.
    let deadline = Instant::now() + Duration::from_secs(20);
    while connections_moved(&mut admin) == spread && Instant::now() < deadline {
        for c in conns.iter_mut() {
            assert_eq!(c.call(&["PING"]).unwrap().raw, b"+PONG\r\n");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        connections_moved(&mut admin) > spread,
        "no connection moved back in 20 s after the load"
    );
    let total: usize = (0..CONNS)
        .flat_map(|i| (0..BATCH).map(move |j| format!("k{i}:{j}")))
        .map(|k| admin.get::<_, usize>(k).unwrap())
        .sum();
    assert_eq!(total, sent, "every INCR acknowledged is counted");
}
