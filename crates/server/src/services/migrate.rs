//! MIGRATE's side of the network: a cache of connections to target servers (Redis's
//! migrate-cached-socket: one per host:port, at most 64, closed after 10 idle seconds)
//! and the transfer of RESTORE commands over one of them, with Redis's protocol and
//! error rules: AUTH and SELECT when needed, every RESTORE pipelined in one write, one
//! reply line read per command, each socket operation bounded by the timeout, one retry
//! on a fresh connection when a cached one turns out dead before any reply.
//!
//! With `tls-cluster yes` the connections are TLS sessions, as Redis 7.0's MIGRATE uses
//! the cluster's connection type.
//!
//! A transfer is blocking I/O: the command runs it on a thread of the worker's blocking
//! pool, so the worker thread keeps serving its other clients (`commands/migrate.rs`).

use crate::net::tls::ClientSide;
use bytes::Bytes;
use parking_lot::Mutex;
use rustls::{ClientConnection, StreamOwned};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Most connections kept (MIGRATE_SOCKET_CACHE_ITEMS).
const CACHE_ITEMS: usize = 64;
/// A cached connection unused this long is closed (MIGRATE_SOCKET_CACHE_TTL).
const CACHE_TTL: Duration = Duration::from_secs(10);
/// The longest reply line kept (Redis reads replies into 1 KiB buffers).
const LINE_MAX: usize = 1024;
/// Bytes written per write call (Redis writes the request in 64 KiB chunks).
const CHUNK: usize = 64 * 1024;

/// A connection to a target: a plain socket, or a TLS session over one.
enum Conn {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Conn {
    fn socket(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => &s.sock,
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

struct Cached {
    conn: Conn,
    /// The database the connection has SELECTed, when known.
    db: Option<i64>,
    last_use: Instant,
}

/// The connections MIGRATE keeps to its targets.
#[derive(Default)]
pub struct Migrations {
    cache: Mutex<HashMap<String, Cached>>,
}

/// One MIGRATE's transfer.
pub struct Transfer {
    pub host: String,
    pub port: String,
    pub db: i64,
    pub timeout: Duration,
    /// AUTH password, or AUTH2 username and password.
    pub auth: Option<(Option<Bytes>, Bytes)>,
    pub replace: bool,
    /// Each key, its TTL in ms (0: none) and its DUMP payload.
    pub keys: Vec<(Bytes, u64, Vec<u8>)>,
    /// TLS for a new connection (`tls-cluster yes`), with the configuration of the time.
    pub tls: Option<ClientSide>,
}

/// How a transfer ended: for each key, whether the target acknowledged its RESTORE, and
/// what went wrong, if anything.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub acked: Vec<bool>,
    pub error: Option<Failure>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The target's first error reply (to AUTH, SELECT or a RESTORE), without its `-`.
    Target(String),
    /// The connection failed (Redis's IOERR reply text).
    Io(&'static str),
}

impl Failure {
    /// MIGRATE's error reply.
    pub fn reply(&self) -> String {
        match self {
            Failure::Target(e) => format!("ERR Target instance replied with error: {e}"),
            Failure::Io(e) => (*e).to_string(),
        }
    }
}

const CONNECT_ERR: &str = "IOERR error or timeout connecting to the client";
const WRITE_ERR: &str = "IOERR error or timeout writing to target instance";
const READ_ERR: &str = "IOERR error or timeout reading to target instance";

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn connect(t: &Transfer) -> io::Result<Conn> {
    let port: u16 = t
        .port
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad port"))?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in (t.host.as_str(), port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, t.timeout) {
            Ok(c) => {
                c.set_nodelay(true)?;
                return match &t.tls {
                    None => Ok(Conn::Plain(c)),
                    Some(tls) => handshake(tls, c, t).map(|s| Conn::Tls(Box::new(s))),
                };
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The TLS handshake, within the timeout, as part of connecting (a failure is a connect
/// error, as in Redis); the reason goes to the log.
fn handshake(
    tls: &ClientSide,
    mut sock: TcpStream,
    t: &Transfer,
) -> io::Result<StreamOwned<ClientConnection, TcpStream>> {
    let run = |sock: &mut TcpStream| {
        sock.set_read_timeout(Some(t.timeout))?;
        sock.set_write_timeout(Some(t.timeout))?;
        let mut session = tls.session(&t.host)?;
        while session.is_handshaking() {
            session.complete_io(sock)?;
        }
        Ok(session)
    };
    match run(&mut sock) {
        Ok(session) => Ok(StreamOwned::new(session, sock)),
        Err(e) => {
            tracing::warn!(
                "MIGRATE: TLS handshake with {}:{} failed: {e}",
                t.host,
                t.port
            );
            Err(e)
        }
    }
}

fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        bulk(out, a);
    }
}

/// Reads one reply line (without its CRLF; longer lines are cut at LINE_MAX).
fn read_line(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let n = r.read_until(b'\n', &mut line)?;
    if n == 0 || !line.ends_with(b"\n") {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    line.truncate(line.len() - 1);
    if line.ends_with(b"\r") {
        line.pop();
    }
    line.truncate(LINE_MAX);
    Ok(line)
}

/// What one attempt over one connection gave.
enum Attempt {
    /// Replies were read (`broken`: the connection failed after some).
    Done { outcome: Outcome, broken: bool },
    /// Nothing was read back: worth one more try on a new connection unless it timed out.
    Failed { timeout: bool, writing: bool },
}

impl Transfer {
    /// The outcome when the first `acked` keys were acknowledged and then `f` happened.
    fn failed(&self, f: Failure, acked: usize) -> Outcome {
        let mut v = vec![true; acked];
        v.resize(self.keys.len(), false);
        Outcome {
            acked: v,
            error: Some(f),
        }
    }
}

impl Migrations {
    /// Connections cached now (INFO `migrate_cached_sockets`).
    pub fn cached(&self) -> usize {
        self.cache.lock().len()
    }

    /// Closes the connections unused for longer than 10 seconds (the background cycle).
    pub fn close_idle(&self) {
        self.cache
            .lock()
            .retain(|_, c| c.last_use.elapsed() <= CACHE_TTL);
    }

    /// Sends `t`'s keys to its target and reads its replies.
    pub fn transfer(&self, t: &Transfer) -> Outcome {
        let name = format!("{}:{}", t.host, t.port);
        let mut may_retry = true;
        loop {
            // A cached connection of the other kind than `tls-cluster` now asks for is
            // dropped: the setting applies from the next MIGRATE on.
            let taken = (self.cache.lock().remove(&name))
                .filter(|c| matches!(c.conn, Conn::Tls(_)) == t.tls.is_some());
            let (mut conn, db) = match taken {
                Some(c) => (c.conn, c.db),
                None => match connect(t) {
                    Ok(c) => (c, None),
                    Err(_) => return t.failed(Failure::Io(CONNECT_ERR), 0),
                },
            };
            match attempt(&mut conn, db, t) {
                Attempt::Done { outcome, broken } => {
                    // A connection that failed mid-way is dropped; after an error reply
                    // its selected database is no longer trusted.
                    if !broken {
                        let db = outcome.error.is_none().then_some(t.db);
                        self.keep(name, conn, db);
                    }
                    return outcome;
                }
                Attempt::Failed { timeout, writing } => {
                    if timeout || !may_retry {
                        let e = if writing { WRITE_ERR } else { READ_ERR };
                        return t.failed(Failure::Io(e), 0);
                    }
                    may_retry = false;
                }
            }
        }
    }

    fn keep(&self, name: String, conn: Conn, db: Option<i64>) {
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_ITEMS {
            // Full: make room by dropping one (Redis drops one at random).
            if let Some(k) = cache.keys().next().cloned() {
                cache.remove(&k);
            }
        }
        cache.insert(
            name,
            Cached {
                conn,
                db,
                last_use: Instant::now(),
            },
        );
    }
}

/// One try over `conn`, whose selected database is `db` if known.
fn attempt(conn: &mut Conn, db: Option<i64>, t: &Transfer) -> Attempt {
    let failed = |e: &io::Error, writing| Attempt::Failed {
        timeout: is_timeout(e),
        writing,
    };
    let sock = conn.socket();
    if let Err(e) = sock
        .set_read_timeout(Some(t.timeout))
        .and_then(|_| sock.set_write_timeout(Some(t.timeout)))
    {
        return failed(&e, true);
    }
    let mut req = Vec::new();
    if let Some((user, pass)) = &t.auth {
        match user {
            Some(u) => command(&mut req, &[b"AUTH", u, pass]),
            None => command(&mut req, &[b"AUTH", pass]),
        }
    }
    let select = db != Some(t.db);
    if select {
        command(&mut req, &[b"SELECT", t.db.to_string().as_bytes()]);
    }
    for (key, ttl, payload) in &t.keys {
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), payload];
        if t.replace {
            args.push(b"REPLACE");
        }
        command(&mut req, &args);
    }
    for chunk in req.chunks(CHUNK) {
        if let Err(e) = conn.write_all(chunk) {
            return failed(&e, true);
        }
    }
    // A TLS session may still hold the last records.
    if let Err(e) = conn.flush() {
        return failed(&e, true);
    }
    let mut r = BufReader::new(conn);
    let mut first_error: Option<Vec<u8>> = None;
    let mut note = |line: &[u8]| {
        let err = line.first() == Some(&b'-');
        if err && first_error.is_none() {
            first_error = Some(line[1..].to_vec());
        }
        err
    };
    // An error to AUTH or SELECT fails every RESTORE after it.
    let mut setup_failed = false;
    for needed in [t.auth.is_some(), select] {
        if needed {
            match read_line(&mut r) {
                Ok(line) => setup_failed |= note(&line),
                Err(e) => return failed(&e, false),
            }
        }
    }
    let mut acked = Vec::with_capacity(t.keys.len());
    for i in 0..t.keys.len() {
        match read_line(&mut r) {
            Ok(line) => {
                let err = note(&line);
                acked.push(!err && !setup_failed);
            }
            // Nothing read back at all: the caller may retry.
            Err(e) if i == 0 && first_error.is_none() => return failed(&e, false),
            // The keys acknowledged so far stand; the rest failed.
            Err(_) => {
                acked.resize(t.keys.len(), false);
                let error = match first_error {
                    Some(e) => Failure::Target(String::from_utf8_lossy(&e).into_owned()),
                    None => Failure::Io(READ_ERR),
                };
                return Attempt::Done {
                    outcome: Outcome {
                        acked,
                        error: Some(error),
                    },
                    broken: true,
                };
            }
        }
    }
    Attempt::Done {
        outcome: Outcome {
            acked,
            error: first_error.map(|e| Failure::Target(String::from_utf8_lossy(&e).into_owned())),
        },
        broken: false,
    }
}
