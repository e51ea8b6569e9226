//! Shared by the integration tests: a redis-server launcher, reading whole values back
//! over RESP into the crate's value model, and sample values of every type and encoding.
#![allow(dead_code)]

pub mod fixtures;
pub mod samples;

use bytes::Bytes;
use redis::Value;
use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use strata_rdb::{
    Item, KeyMeta, PendingEntry, RdbValue, Reader, StreamConsumer, StreamEntry, StreamGroup,
    StreamId, StreamValue,
};

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("strata-rdb-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A redis-server process with its data directory (where it loads and saves
/// `dump.rdb`), killed when dropped.
pub struct Redis {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Redis {
    /// Starts redis-server on a free port with persistence only on SAVE, loading
    /// `dir/dump.rdb` if it exists. Panics (with the log) if it does not come up, and with
    /// an install hint if redis-server is missing: these tests must never skip silently.
    pub fn start(dir: &Path, args: &[&str]) -> Redis {
        let port = free_port();
        let log = dir.join("redis.log");
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--dbfilename",
                "dump.rdb",
            ])
            .arg("--dir")
            .arg(dir)
            .arg("--logfile")
            .arg(&log)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("redis-server is required (apt-get install -y redis-server): {e}")
            });
        let mut r = Redis {
            child,
            port,
            dir: dir.to_path_buf(),
        };
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = r.child.try_wait() {
                panic!(
                    "redis-server exited ({status}): {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                let mut c = r.con();
                // Still loading a file answers -LOADING: wait for a real PONG.
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return r;
                }
            }
            assert!(
                Instant::now() < end,
                "redis-server did not start: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A connection, retried for a while: on a loaded two-core machine a connect can
    /// time out while the whole test suite runs.
    pub fn con(&self) -> redis::Connection {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            match redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
                .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            {
                Ok(c) => return c,
                Err(e) if Instant::now() >= end => panic!("connect to redis-server: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// SAVE, returning the file's path.
    pub fn save(&self) -> PathBuf {
        let _: () = redis::cmd("SAVE").query(&mut self.con()).expect("SAVE");
        self.dir.join("dump.rdb")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

/// Runs redis-check-rdb on `path`, panicking with its output unless it accepts the file.
pub fn check_rdb(path: &Path) {
    let out = Command::new("redis-check-rdb")
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!("redis-check-rdb is required (apt-get install -y redis-tools): {e}")
        });
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && text.contains("RDB looks OK"),
        "redis-check-rdb refused {}:\n{text}",
        path.display()
    );
}

/// Every item of a file, read with the crate's Reader.
pub fn read_items(path: &Path) -> Vec<Item> {
    let f = std::fs::File::open(path).expect("open rdb");
    Reader::new(f)
        .expect("header")
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Keys of a file: (db, key) -> (value, meta), values normalized.
pub fn file_keys(path: &Path) -> BTreeMap<(u64, Bytes), (RdbValue, KeyMeta)> {
    read_items(path)
        .into_iter()
        .filter_map(|i| match i {
            Item::Key(e) => Some(((e.db, e.key), (e.value.normalized(), e.meta))),
            _ => None,
        })
        .collect()
}

fn bulk(v: &Value) -> Bytes {
    match v {
        Value::BulkString(b) => Bytes::copy_from_slice(b),
        Value::SimpleString(s) => Bytes::copy_from_slice(s.as_bytes()),
        Value::Int(i) => Bytes::from(i.to_string()),
        other => panic!("expected a string, got {other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::BulkString(b) => std::str::from_utf8(b)
            .expect("utf8")
            .parse()
            .expect("integer"),
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn array(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) => a,
        other => panic!("expected an array, got {other:?}"),
    }
}

pub fn parse_id(b: &[u8]) -> StreamId {
    let s = std::str::from_utf8(b).expect("utf8 id");
    let (ms, seq) = s.split_once('-').expect("ms-seq");
    StreamId::new(ms.parse().expect("ms"), seq.parse().expect("seq"))
}

/// A RESP2 map reply (flat array of name, value) as a lookup.
fn map(v: &Value) -> BTreeMap<String, &Value> {
    array(v)
        .chunks(2)
        .map(|kv| (String::from_utf8_lossy(&bulk(&kv[0])).to_string(), &kv[1]))
        .collect()
}

fn fetch_stream(con: &mut redis::Connection, key: &[u8]) -> StreamValue {
    let info: Value = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(key)
        .arg("FULL")
        .arg("COUNT")
        .arg(0)
        .query(con)
        .expect("XINFO STREAM FULL");
    let m = map(&info);
    let id = |name: &str| parse_id(&bulk(m[name]));
    let entries = array(m["entries"])
        .iter()
        .map(|e| {
            let e = array(e);
            let kv = array(&e[1]);
            StreamEntry {
                id: parse_id(&bulk(&e[0])),
                fields: kv.chunks(2).map(|p| (bulk(&p[0]), bulk(&p[1]))).collect(),
            }
        })
        .collect();
    let groups = array(m["groups"])
        .iter()
        .map(|g| {
            let g = map(g);
            StreamGroup {
                name: bulk(g["name"]),
                last_delivered_id: parse_id(&bulk(g["last-delivered-id"])),
                entries_read: match g["entries-read"] {
                    Value::Nil => None,
                    v => Some(int(v) as u64),
                },
                pending: array(g["pending"])
                    .iter()
                    .map(|p| {
                        let p = array(p);
                        PendingEntry {
                            id: parse_id(&bulk(&p[0])),
                            consumer: bulk(&p[1]),
                            delivery_time: int(&p[2]),
                            delivery_count: int(&p[3]) as u64,
                        }
                    })
                    .collect(),
                consumers: array(g["consumers"])
                    .iter()
                    .map(|c| {
                        let c = map(c);
                        StreamConsumer {
                            name: bulk(c["name"]),
                            seen_time: int(c["seen-time"]),
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    StreamValue {
        entries,
        last_id: id("last-generated-id"),
        first_id: id("recorded-first-entry-id"),
        max_deleted_entry_id: id("max-deleted-entry-id"),
        entries_added: int(m["entries-added"]) as u64,
        groups,
    }
}

/// A key's whole value as Redis reports it (normalized), or None if it does not exist.
pub fn fetch(con: &mut redis::Connection, key: &[u8]) -> Option<RdbValue> {
    let ty: String = redis::cmd("TYPE").arg(key).query(con).expect("TYPE");
    let strings = |v: Value| array(&v).iter().map(bulk).collect::<Vec<_>>();
    let q = |con: &mut redis::Connection, c: &str, extra: &[&str]| -> Value {
        let mut cmd = redis::cmd(c);
        cmd.arg(key);
        for a in extra {
            cmd.arg(*a);
        }
        cmd.query(con).unwrap_or_else(|e| panic!("{c}: {e}"))
    };
    let v = match ty.as_str() {
        "none" => return None,
        "string" => RdbValue::String(bulk(&q(con, "GET", &[]))),
        "list" => RdbValue::List(strings(q(con, "LRANGE", &["0", "-1"])).into()),
        "set" => RdbValue::Set(strings(q(con, "SMEMBERS", &[])).into()),
        "zset" => {
            let flat = strings(q(con, "ZRANGE", &["0", "-1", "WITHSCORES"]));
            RdbValue::SortedSet(
                flat.chunks(2)
                    .map(|p| {
                        let s = std::str::from_utf8(&p[1]).expect("score");
                        (p[0].clone(), s.parse::<f64>().expect("score"))
                    })
                    .collect(),
            )
        }
        "hash" => {
            let flat = strings(q(con, "HGETALL", &[]));
            RdbValue::Hash(
                flat.chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect(),
            )
        }
        "stream" => RdbValue::Stream(Box::new(fetch_stream(con, key))),
        other => panic!("unexpected type {other}"),
    };
    Some(v.normalized())
}

/// PEXPIRETIME of a key: None when it has no expiry.
pub fn expire_ms(con: &mut redis::Connection, key: &[u8]) -> Option<i64> {
    let t: i64 = redis::cmd("PEXPIRETIME")
        .arg(key)
        .query(con)
        .expect("PEXPIRETIME");
    (t >= 0).then_some(t)
}

/// Every key of database `db`: key -> (value, expiry).
pub fn fetch_db(con: &mut redis::Connection, db: u64) -> BTreeMap<Bytes, (RdbValue, Option<i64>)> {
    let _: () = redis::cmd("SELECT").arg(db).query(con).expect("SELECT");
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    keys.into_iter()
        .map(|k| {
            let v = fetch(con, &k).expect("key vanished");
            let t = expire_ms(con, &k);
            (Bytes::from(k), (v, t))
        })
        .collect()
}

/// Asserts that the keys of the RDB file at `path` (read with the crate's Reader) are
/// exactly the keys redis-server holds, database by database, with the same values and
/// expiry times. Returns how many keys were compared.
pub fn assert_file_matches_server(path: &Path, con: &mut redis::Connection) -> usize {
    let file = file_keys(path);
    let mut compared = 0;
    for db in 0..16u64 {
        let server = fetch_db(con, db);
        let ours: BTreeMap<Bytes, (RdbValue, Option<i64>)> = file
            .iter()
            .filter(|((d, _), _)| *d == db)
            .map(|((_, k), (v, m))| (k.clone(), (v.clone(), m.expire_ms)))
            .collect();
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            server.keys().collect::<Vec<_>>(),
            "keys of db {db}"
        );
        for (k, theirs) in &server {
            assert!(
                ours[k] == *theirs,
                "db {db} key {k:?}:\nfile:   {:?}\nserver: {theirs:?}",
                ours[k]
            );
        }
        compared += server.len();
    }
    let _: () = redis::cmd("SELECT").arg(0).query(con).expect("SELECT");
    compared
}
