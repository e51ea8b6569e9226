//! `unixsocket` and `unixsocketperm` on the real binary, driven by the `redis` crate over
//! the socket: one keyspace with the TCP listener, the socket file's mode, the client's
//! address and flags as redis-server shows them, a Unix socket as the only listener
//! (`port 0`), the stale file a crash leaves replaced at start and the file removed on
//! SHUTDOWN, and a busy script answering the socket's other clients.

mod common;

use common::{encode_command, free_port, strata, temp_dir};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn unix_client(path: &Path) -> redis::Connection {
    let url = format!("unix://{}", path.display());
    redis::Client::open(url)
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
        .unwrap_or_else(|e| panic!("connect to {}: {e}", path.display()))
}

fn text(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<redis::Value>(c) {
        Ok(redis::Value::Okay) => "OK".to_string(),
        Ok(redis::Value::SimpleString(s)) => s,
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")),
    }
}

/// CLIENT INFO's `name=value` fields.
fn client_fields(c: &mut redis::Connection) -> Vec<(String, String)> {
    text(c, &["CLIENT", "INFO"])
        .split_whitespace()
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn field(fields: &[(String, String)], name: &str) -> String {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
}

fn socket_in(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("dir");
    dir.join("strata.sock")
}

/// Strata on a TCP port of its own (`--port 0` beside a Unix socket means no TCP
/// listener) and on a socket in a fresh directory `tag`, with `extra` options.
fn strata_with_socket(tag: &str, extra: &[&str]) -> (common::Proc, PathBuf, PathBuf) {
    let dir = temp_dir(tag);
    let path = socket_in(&dir);
    let port = free_port().to_string();
    let socket = path.to_str().expect("utf-8 path");
    let mut args = vec!["--port", &port, "--unixsocket", socket];
    args.extend_from_slice(extra);
    let p = strata(&args);
    (p, dir, path)
}

#[test]
fn the_socket_serves_the_same_keyspace_and_shows_its_clients_as_redis_does() {
    let (p, dir, path) = strata_with_socket("unix", &["--unixsocketperm", "700"]);
    let path_s = path.to_str().expect("utf-8 path");
    let meta = std::fs::metadata(&path).expect("the socket file");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);

    let mut unix = unix_client(&path);
    let mut tcp = p.client();
    assert_eq!(text(&mut unix, &["SET", "k", "over unix"]), "OK");
    assert_eq!(text(&mut tcp, &["GET", "k"]), "over unix");
    assert_eq!(text(&mut tcp, &["SET", "k", "over tcp"]), "OK");
    assert_eq!(text(&mut unix, &["GET", "k"]), "over tcp");

    // Large values and deep pipelines cross the socket whole.
    let big: Vec<u8> = (0..5 << 20).map(|i: u32| (i % 251) as u8).collect();
    redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query::<()>(&mut unix)
        .expect("SET big");
    let back: Vec<u8> = redis::cmd("GET").arg("big").query(&mut tcp).expect("GET");
    assert!(back == big, "the 5 MiB value came back changed");
    let mut pipe = redis::pipe();
    for i in 0..2000 {
        pipe.cmd("INCR").arg("n").ignore();
        pipe.cmd("RPUSH").arg("l").arg(i).ignore();
    }
    pipe.cmd("GET").arg("n").cmd("LLEN").arg("l");
    let (n, len): (i64, i64) = pipe.query(&mut unix).expect("pipeline");
    assert_eq!((n, len), (2000, 2000));

    // The client as Debian's redis-server shows a client of its own socket.
    let rdir = temp_dir("unix-redis");
    let rpath = socket_in(&rdir);
    let rpath_s = rpath.to_str().expect("utf-8 path");
    let r = common::redis(&["--unixsocket", rpath_s, "--unixsocketperm", "700"]);
    let mut runix = unix_client(&rpath);
    let rmeta = std::fs::metadata(&rpath).expect("redis's socket file");
    assert_eq!(
        rmeta.permissions().mode() & 0o777,
        meta.permissions().mode() & 0o777
    );
    let (ours, theirs) = (client_fields(&mut unix), client_fields(&mut runix));
    for (name, own_path) in [("addr", path_s), ("laddr", path_s)] {
        let rpath_field = field(&theirs, name).replace(rpath_s, "PATH");
        assert_eq!(
            field(&ours, name).replace(own_path, "PATH"),
            rpath_field,
            "{name}"
        );
    }
    assert_eq!(field(&ours, "flags"), field(&theirs, "flags"));
    // MONITOR names a socket's client as Redis does (`unix:PATH`).
    let (mut mon, mut rmon) = (
        common::send_only(&p, &["MONITOR"]),
        common::send_only(&r, &["MONITOR"]),
    );
    for m in [&mut mon, &mut rmon] {
        assert_eq!(common::read_text(m), "+OK\\r\\n");
    }
    assert_eq!(text(&mut unix, &["SET", "seen", "1"]), "OK");
    assert_eq!(text(&mut runix, &["SET", "seen", "1"]), "OK");
    let source = |m: &mut common::RespConn, own: &str| {
        let line = common::read_text(m).replace(own, "PATH");
        line.split_once('[')
            .map(|(_, rest)| rest.to_string())
            .unwrap_or(line)
    };
    assert_eq!(source(&mut mon, path_s), source(&mut rmon, rpath_s));
    // A TCP client is not flagged.
    assert_eq!(field(&client_fields(&mut tcp), "flags"), "N");
    drop(r);
    let _ = std::fs::remove_dir_all(&rdir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server process, killed when dropped (a failed assertion must not leave it running).
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts Strata on `path` alone (`--port 0`) and waits for its log to say it listens.
fn strata_on_socket_only(path: &Path, data: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(["serve", "--port", "0", "--unixsocket"])
        .arg(path)
        .arg("--dir")
        .arg(data);
    let (child, mut lines) = common::spawn_logged(&mut cmd);
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("ready to accept connections at") => break,
            Some(Ok(l)) => assert!(!l.contains("Ready to accept connections on"), "{l}"),
            _ => panic!("strata exited before listening"),
        }
    }
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    Server(child)
}

#[test]
fn port_0_with_a_socket_listens_on_the_socket_alone_and_shutdown_removes_it() {
    let dir = temp_dir("unix-only");
    let path = socket_in(&dir);
    // A file left by a server that crashed: replaced, as Redis unlinks it first.
    std::fs::write(&path, b"stale").expect("stale file");
    let data = dir.join("data");
    let mut child = strata_on_socket_only(&path, &data);
    let mut c = unix_client(&path);
    assert!(text(&mut c, &["INFO", "server"]).contains("tcp_port:0\r\n"));
    assert_eq!(text(&mut c, &["SET", "kept", "yes"]), "OK");
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut c);
    let end = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < end, "SHUTDOWN did not end the server");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "the socket file outlived a clean exit");

    // Started again on the same directory, the data is there.
    let second = strata_on_socket_only(&path, &data);
    let mut c = unix_client(&path);
    assert_eq!(text(&mut c, &["GET", "kept"]), "yes");
    drop(second);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_busy_script_answers_the_sockets_other_clients() {
    let extra = ["--threads", "1", "--busy-reply-threshold", "100"];
    let (p, dir, path) = strata_with_socket("unix-busy", &extra);
    let mut watcher = unix_client(&path);
    let mut script = std::os::unix::net::UnixStream::connect(&path).expect("connect");
    script
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    script
        .write_all(&encode_command(&["EVAL", "while true do end", "0"]))
        .expect("send");
    let end = Instant::now() + Duration::from_secs(10);
    let busy = loop {
        let r = text(&mut watcher, &["PING"]);
        if r.starts_with("BUSY") {
            break r;
        }
        assert_eq!(r, "PONG");
        assert!(Instant::now() < end, "the script never got busy");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(busy.contains("busy running a script"), "{busy}");
    assert_eq!(text(&mut watcher, &["SCRIPT", "KILL"]), "OK");
    let mut reply = String::new();
    BufReader::new(&script)
        .read_line(&mut reply)
        .expect("the script's reply");
    assert!(
        reply.starts_with("-ERR") && reply.contains("killed"),
        "{reply}"
    );
    assert_eq!(text(&mut watcher, &["PING"]), "PONG");
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An empty `bind` listens on no TCP address, as in Redis 7.0: the socket stays the way
/// in, and `bind` set again opens the port again.
#[test]
fn an_empty_bind_closes_tcp_and_the_socket_stays() {
    let (p, dir, path) = strata_with_socket("unix-bind", &[]);
    let mut unix = unix_client(&path);
    let tcp_up = || std::net::TcpStream::connect(("127.0.0.1", p.port)).is_ok();
    assert!(tcp_up());
    assert_eq!(text(&mut unix, &["CONFIG", "SET", "bind", ""]), "OK");
    assert!(!tcp_up(), "TCP still listens with an empty bind");
    assert_eq!(text(&mut unix, &["PING"]), "PONG");
    assert_eq!(
        text(&mut unix, &["CONFIG", "SET", "bind", "127.0.0.1"]),
        "OK"
    );
    assert!(tcp_up(), "TCP did not come back");
    let _ = std::fs::remove_dir_all(&dir);
}
