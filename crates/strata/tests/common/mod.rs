//! Shared by the integration tests: start the real `strata` binary (and Debian's
//! `redis-server` for differential tests) on free loopback ports, and talk to them.
#![allow(dead_code)]

pub mod hogs;
pub mod model;
mod wire;

pub use wire::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process, killed when dropped.
pub struct Proc {
    pub port: u16,
    child: Child,
    pub name: &'static str,
    /// A data directory this Proc made for itself, removed when it drops.
    pub own_dir: Option<std::path::PathBuf>,
    /// Strata's log lines so far (standard output, from its first line).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = &self.own_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl Proc {
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .unwrap_or_else(|e| panic!("connect to {} on {}: {e}", self.name, self.port))
    }

    /// A raw TCP connection with a read timeout, for protocol-level tests.
    pub fn raw(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, the clean stop a service manager asks for, once the server handles
    /// it: the server installs its handler only after it logs that it is ready, and until
    /// then SIGTERM ends it outright, without its shutdown snapshot.
    pub fn terminate(&self) {
        self.signal(libc::SIGTERM, "SIGTERM");
    }

    /// Sends SIGINT (Ctrl+C), once the server handles it (see `terminate`).
    pub fn interrupt(&self) {
        self.signal(libc::SIGINT, "SIGINT");
    }

    fn signal(&self, sig: libc::c_int, name: &str) {
        let pid = self.child.id();
        let end = Instant::now() + Duration::from_secs(10);
        while !catches_sigterm(pid) {
            assert!(
                Instant::now() < end,
                "{} never installed a SIGTERM handler",
                self.name
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped; no memory
        // is involved.
        let r = unsafe { libc::kill(pid as libc::pid_t, sig) };
        assert_eq!(
            r,
            0,
            "{name} to {}: {}",
            self.name,
            std::io::Error::last_os_error()
        );
    }

    /// Waits for the process to exit by itself (SHUTDOWN); true if it did within `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

/// Whether a line of `p`'s log so far contains `text`.
pub fn logged(p: &Proc, text: &str) -> bool {
    p.log.lock().unwrap().iter().any(|l| l.contains(text))
}

/// Whether process `pid` has a handler for SIGTERM (the SigCgt mask of /proc/PID/status).
fn catches_sigterm(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGTERM - 1)) != 0)
}

/// The directories `temp_dir` handed out, removed when the test binary exits.
static TEMP_DIRS: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

extern "C" fn remove_temp_dirs() {
    if let Ok(dirs) = TEMP_DIRS.lock() {
        for d in dirs.iter() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A fresh data directory under the system temp dir, unique to this process and call.
/// It is removed when the test binary exits, whether its tests passed or not (a test
/// that fails before its own clean-up would otherwise leave it behind).
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("strata-test-{}-{tag}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain function; it only takes a lock and removes files.
        unsafe { libc::atexit(remove_temp_dirs) };
    });
    if let Ok(mut dirs) = TEMP_DIRS.lock() {
        dirs.push(d.clone());
    }
    d
}

/// Starts the real server on a free port (unless `args` names a `--port`). Unless `args`
/// names a `--dir`, it gets a fresh data directory of its own (removed when the Proc
/// drops). A test that asks for several `--threads` gets its connections dealt to them in
/// turn (`--worker-placement round-robin`): the default placement keeps a test's few
/// connections on the first worker, and such a test means to exercise several.
pub fn strata(args: &[&str]) -> Proc {
    let own_dir = (!args.contains(&"--dir")).then(|| temp_dir("data"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("serve");
    let several = args.windows(2).any(|a| a[0] == "--threads" && a[1] != "1");
    if several && !args.contains(&"--worker-placement") {
        cmd.args(["--worker-placement", "round-robin"]);
    }
    if !args.contains(&"--port") {
        cmd.args(["--port", "0"]);
    }
    if let Some(d) = &own_dir {
        cmd.arg("--dir").arg(d);
    }
    cmd.args(args);
    let (child, mut lines) = spawn_logged(&mut cmd);
    let mut start = Vec::new();
    let port = loop {
        let line = match lines.next() {
            Some(Ok(l)) => l,
            _ => panic!("strata exited before listening"),
        };
        start.push(line.clone());
        if let Some(rest) = line.split("Ready to accept connections on ").nth(1) {
            let addr = rest.split_whitespace().next().unwrap_or_default();
            break addr
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("port in log");
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    let log = std::sync::Arc::new(std::sync::Mutex::new(start));
    let keep = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            keep.lock().map(|mut l| l.push(line)).ok();
        }
    });
    Proc {
        port,
        child,
        name: "strata",
        own_dir,
        log,
    }
}

/// The log a spawned server writes to its standard output, line by line.
pub type LogLines = std::io::Lines<BufReader<std::process::ChildStdout>>;

/// Spawns `cmd` (a server) with its standard output read here, line by line, and its
/// standard error passed through.
pub fn spawn_logged(cmd: &mut Command) -> (Child, LogLines) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn strata");
    let stdout = child.stdout.take().expect("stdout");
    (child, BufReader::new(stdout).lines())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Starts Debian's redis-server without persistence. Panics with the install hint if it is
/// missing: differential tests must not be skipped silently.
pub fn redis(args: &[&str]) -> Proc {
    let p = spawn_redis(args);
    wait_listening(p.port);
    p
}

fn spawn_redis(args: &[&str]) -> Proc {
    let port = free_port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--bind", "127.0.0.1"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("redis-server is required (apt-get install -y redis-server): {e}")
        });
    Proc {
        port,
        child,
        name: "redis",
        own_dir: None,
        log: Default::default(),
    }
}

fn wait_listening(port: u16) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
            if s.write_all(b"PING\r\n").is_ok() {
                let mut buf = [0u8; 7];
                if s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n" {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("server on port {port} did not start");
}

/// Sends raw bytes and reads whatever arrives until `expect_len` bytes or EOF/timeout.
pub fn roundtrip(s: &mut TcpStream, req: &[u8], expect_len: usize) -> Vec<u8> {
    s.write_all(req).expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while out.len() < expect_len {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    out
}

/// Starts redis-server like [`redis`], for configurations where PING needs a password
/// (`--requirepass`): ready once it answers PING at all.
pub fn redis_requiring_auth(args: &[&str]) -> Proc {
    let p = spawn_redis(args);
    let port = p.port;
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
            let mut r = BufReader::new(s);
            if r.get_mut().write_all(b"PING\r\n").is_ok() && read_reply(&mut r).is_ok() {
                return p;
            }
        }
        assert!(
            Instant::now() < end,
            "redis-server on port {port} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Strata on a free port, with a `redis` crate client and a raw RESP connection.
pub fn setup() -> (Proc, redis::Connection, RespConn) {
    let p = strata(&[]);
    let c = p.client();
    let r = RespConn::new(&p);
    (p, c, r)
}

/// Runs a command through the `redis` crate; an error reply panics, naming the command.
pub fn query<T: redis::FromRedisValue>(c: &mut redis::Connection, args: &[&str]) -> T {
    let mut r = redis::cmd(args[0]);
    for a in &args[1..] {
        r.arg(*a);
    }
    r.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// A command's arguments as text, for a failure's message.
fn shown_args<A: redis::ToRedisArgs>(args: &[A]) -> Vec<String> {
    args.iter()
        .flat_map(|a| a.to_redis_args())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
}

/// A command's raw `redis::Value`; an error reply panics, naming the command.
pub fn cmd<A: redis::ToRedisArgs>(c: &mut redis::Connection, args: &[A]) -> redis::Value {
    let mut r = redis::Cmd::new();
    for a in args {
        r.arg(a);
    }
    r.query(c)
        .unwrap_or_else(|e| panic!("{:?}: {e}", shown_args(args)))
}

/// A command whose reply must be an integer.
pub fn int<A: redis::ToRedisArgs>(c: &mut redis::Connection, args: &[A]) -> i64 {
    match cmd(c, args) {
        redis::Value::Int(n) => n,
        other => panic!("{:?}: expected an integer, got {other:?}", shown_args(args)),
    }
}

/// A command whose reply must be OK.
pub fn ok<A: redis::ToRedisArgs>(c: &mut redis::Connection, args: &[A]) {
    match cmd(c, args) {
        redis::Value::Okay => {}
        redis::Value::SimpleString(s) if s == "OK" => {}
        other => panic!("{:?}: expected OK, got {other:?}", shown_args(args)),
    }
}

/// GET's reply.
pub fn get(c: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    bulk(c, &["GET", key])
}

/// The elements of an array reply of integers (panics on any other reply).
pub fn ints(v: &redis::Value) -> Vec<i64> {
    match v {
        redis::Value::Array(a) => a
            .iter()
            .map(|x| match x {
                redis::Value::Int(n) => *n,
                other => panic!("expected integers, got {other:?}"),
            })
            .collect(),
        other => panic!("expected an array, got {other:?}"),
    }
}

/// KEYS `pattern`'s reply as a set; a key listed twice fails the test.
pub fn keys_of(c: &mut redis::Connection, pattern: &str) -> std::collections::BTreeSet<String> {
    let v: Vec<String> = redis::cmd("KEYS").arg(pattern).query(c).expect("KEYS");
    let set: std::collections::BTreeSet<String> = v.iter().cloned().collect();
    assert_eq!(set.len(), v.len(), "KEYS returned a key twice: {v:?}");
    set
}

/// The clock, in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .expect("clock")
}

/// Redis's error for a command given the wrong number of arguments.
pub fn arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Redis's error for an argument that must be an integer.
pub const NOT_INT: &str = "ERR value is not an integer or out of range";
pub const SYNTAX: &str = "ERR syntax error";

/// A bulk reply's bytes, or None for nil.
pub fn bulk<A: redis::ToRedisArgs>(c: &mut redis::Connection, args: &[A]) -> Option<Vec<u8>> {
    match cmd(c, args) {
        redis::Value::Nil => None,
        redis::Value::BulkString(b) => Some(b),
        other => panic!(
            "{:?}: expected a bulk string, got {other:?}",
            shown_args(args)
        ),
    }
}

/// The exact error line (without '-' and CRLF) a command gets, over a raw connection.
pub fn err<A: AsRef<[u8]>>(r: &mut RespConn, args: &[A]) -> String {
    let rep = r.call(args).expect("call");
    assert_eq!(rep.kind, b'-', "should fail, got {}", rep.shown());
    String::from_utf8_lossy(&rep.raw[1..rep.raw.len() - 2]).into_owned()
}

/// A command's reply as the bytes the server sent.
pub fn raw<A: AsRef<[u8]>>(r: &mut RespConn, args: &[A]) -> Vec<u8> {
    r.call(args).expect("call").raw
}

/// Cases for a property test: `PROPTEST_CASES` from the environment, else `default`.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (xorshift64) for randomized tests: both servers of a
/// differential test get the same arguments.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    /// Up to `max - 1` bytes from `alphabet`.
    pub fn bytes_upto(&mut self, max: u64, alphabet: &[u8]) -> Vec<u8> {
        let n = self.below(max) as usize;
        self.bytes(n, alphabet)
    }
    pub fn bytes(&mut self, n: usize, alphabet: &[u8]) -> Vec<u8> {
        (0..n)
            .map(|_| alphabet[self.below(alphabet.len() as u64) as usize])
            .collect()
    }
}

/// The elements of an array reply of bulk strings (panics on any other reply).
pub fn bulk_strings(v: redis::Value) -> Vec<Vec<u8>> {
    match v {
        redis::Value::Array(v) => v
            .into_iter()
            .map(|x| match x {
                redis::Value::BulkString(b) => b,
                other => panic!("expected bulk strings, got {other:?}"),
            })
            .collect(),
        other => panic!("expected an array, got {other:?}"),
    }
}

/// A server on `dir`. Tests kill it right after their writes, so unless told otherwise it
/// runs `appendfsync always` (under everysec the last writes may be lost, as documented).
pub fn serve_in(dir: &std::path::Path, extra: &[&str]) -> Proc {
    let d = dir.to_str().unwrap();
    let mut args = vec!["--dir", d];
    if !extra.contains(&"--appendfsync") {
        args.extend_from_slice(&["--appendfsync", "always"]);
    }
    args.extend_from_slice(extra);
    strata(&args)
}

/// A tiered server's options: almost everything spills to the tier.
pub const TIERED: [&str; 6] = [
    "--maxmemory",
    "1mb",
    "--tiering",
    "yes",
    "--maxmemory-policy",
    "allkeys-lru",
];

/// A server started with `TIERED` and `extra`.
pub fn tiered(extra: &[&str]) -> Proc {
    let mut args = TIERED.to_vec();
    args.extend_from_slice(extra);
    strata(&args)
}

/// Sets `{prefix}{i}` to `value` for each i below `n`, one command at a time (a tiered
/// server evicts between them).
pub fn set_many(c: &mut redis::Connection, prefix: &str, n: usize, value: &[u8]) {
    for i in 0..n {
        let _: () = redis::cmd("SET")
            .arg(format!("{prefix}{i}"))
            .arg(value)
            .query(c)
            .unwrap();
    }
}

/// A field of INFO persistence.
pub fn info_field(c: &mut redis::Connection, field: &str) -> String {
    section_field(c, "persistence", field)
}

/// A field of one INFO section.
pub fn section_field(c: &mut redis::Connection, section: &str, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .trim()
        .to_string()
}

/// A field of INFO tiering, parsed (a count, a byte figure, a ratio).
pub fn tiering_value<T: std::str::FromStr>(c: &mut redis::Connection, field: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    section_field(c, "tiering", field).parse().unwrap()
}

/// A count or byte figure of INFO tiering.
pub fn tiering_field(c: &mut redis::Connection, field: &str) -> u64 {
    tiering_value(c, field)
}

/// Turns the active expiry cycle off (DEBUG SET-ACTIVE-EXPIRE 0, on a server started with
/// `--enable-debug-command yes`): expired keys stay until something looks them up.
pub fn active_expire_off(c: &mut redis::Connection) {
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query(c)
        .unwrap();
}

/// Waits for the running snapshot to end, and checks it succeeded (a BGSAVE's status and
/// a rewrite's are kept apart, as Redis keeps them).
pub fn wait_snapshot_done(c: &mut redis::Connection) {
    wait_snapshot_end(c);
    assert_eq!(info_field(c, "rdb_last_bgsave_status"), "ok");
    assert_eq!(info_field(c, "aof_last_bgrewrite_status"), "ok");
}

/// Waits for the running snapshot to end, whatever its outcome.
pub fn wait_snapshot_end(c: &mut redis::Connection) {
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while info_field(c, "rdb_bgsave_in_progress") != "0" {
        assert!(std::time::Instant::now() < end, "snapshot never finished");
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ---------------------------------------------------------------------------------------
// Blocked clients: sending without reading, waiting until they block, replies as text.

/// INFO's blocked_clients.
pub fn blocked_clients(c: &mut RespConn) -> usize {
    let info = call_text(c, &["info", "clients"]);
    info.split("blocked_clients:")
        .nth(1)
        .and_then(|r| r.split(['\r', '\\']).next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no blocked_clients in {info}"))
}

/// Waits until INFO reports `n` blocked clients.
pub fn wait_blocked(c: &mut RespConn, n: usize) {
    let end = Instant::now() + Duration::from_secs(5);
    while blocked_clients(c) != n {
        assert!(Instant::now() < end, "never reached {n} blocked clients");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Sends a command on a new connection without reading its reply.
pub fn send_only(p: &Proc, cmd: &[&str]) -> RespConn {
    let mut c = RespConn::new(p);
    c.send(&encode_command(cmd)).unwrap();
    c
}

/// A reply's bytes as text, CRLF written `\\r\\n`.
pub fn reply_text(r: RawReply) -> String {
    String::from_utf8_lossy(&r.raw).replace("\r\n", "\\r\\n")
}

pub fn read_text(c: &mut RespConn) -> String {
    reply_text(c.read().unwrap())
}

pub fn call_text(c: &mut RespConn, cmd: &[&str]) -> String {
    reply_text(c.call(cmd).unwrap())
}

/// A tmpfs of `size` (as mount's `size=` takes it) mounted on `dir`, unmounted and removed
/// when dropped: a file system a test can fill. Mounting needs root (CI has it); elsewhere
/// None, and the test says loudly that it did not run.
pub struct Tmpfs(pub std::path::PathBuf);

pub fn mount_tmpfs(dir: &std::path::Path, size: &str, test: &str) -> Option<Tmpfs> {
    std::fs::create_dir_all(dir).unwrap();
    let mount = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .output();
    match &mount {
        Ok(o) if o.status.success() => Some(Tmpfs(dir.to_path_buf())),
        other => {
            eprintln!(
                "SKIPPED {test}: cannot mount a tmpfs ({other:?}); run as root to test a full disk"
            );
            None
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
