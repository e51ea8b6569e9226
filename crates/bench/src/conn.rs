//! Connecting, request encoding, and a small blocking client for the set-up and check
//! steps around a measured run (INFO, FUNCTION LOAD, check writes). The measured traffic
//! goes through the event loop in `driver.rs`.

use crate::reply::{self, Value};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Appends a RESP multibulk request.
pub fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    push_header(out, b'*', args.len());
    for a in args {
        push_bulk(out, a.as_ref());
    }
}

#[inline]
pub fn push_header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    let mut buf = [0u8; 20];
    let mut i = 20;
    let mut v = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
    out.extend_from_slice(b"\r\n");
}

#[inline]
pub fn push_bulk(out: &mut Vec<u8>, b: &[u8]) {
    push_header(out, b'$', b.len());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// A TCP connection with NODELAY set (requests are small and latency is measured).
pub fn connect(addr: &str) -> Result<TcpStream, String> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .collect();
    let mut last = format!("cannot resolve {addr}");
    for a in addrs {
        match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Err(last)
}

/// An owned reply, for the blocking client.
#[derive(Clone, Debug, PartialEq)]
pub enum Owned {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Bool(bool),
    Array(Vec<Owned>),
}

impl Owned {
    fn from(v: &Value) -> Owned {
        match v {
            Value::Simple(b) => Owned::Simple(String::from_utf8_lossy(b).into_owned()),
            Value::Error(b) => Owned::Error(String::from_utf8_lossy(b).into_owned()),
            Value::Int(n) => Owned::Int(*n),
            Value::Bulk(b) => Owned::Bulk(b.to_vec()),
            Value::Nil => Owned::Nil,
            Value::Bool(b) => Owned::Bool(*b),
            Value::Array(a) => Owned::Array(a.iter().map(Owned::from).collect()),
        }
    }

    pub fn int(&self) -> Option<i64> {
        match self {
            Owned::Int(n) => Some(*n),
            Owned::Bulk(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            Owned::Simple(s) => s.parse().ok(),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<String> {
        match self {
            Owned::Simple(s) | Owned::Error(s) => Some(s.clone()),
            Owned::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Owned::Int(n) => Some(n.to_string()),
            _ => None,
        }
    }

    pub fn items(&self) -> &[Owned] {
        match self {
            Owned::Array(a) => a,
            _ => &[],
        }
    }
}

/// One blocking connection: send a command, read its reply.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    pub addr: String,
}

impl Client {
    pub fn connect(addr: &str, password: Option<&str>) -> Result<Client, String> {
        let stream = connect(addr)?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
        let mut c = Client {
            stream,
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            addr: addr.to_string(),
        };
        if let Some(p) = password {
            c.ok(&["AUTH", p])?;
        }
        Ok(c)
    }

    /// Sends a command and reads its reply; an error reply is returned as `Owned::Error`.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Owned, String> {
        let mut req = Vec::new();
        encode(&mut req, args);
        self.stream
            .write_all(&req)
            .map_err(|e| format!("{}: write: {e}", self.addr))?;
        self.read()
    }

    /// Like `call`, but an error reply is an `Err`.
    pub fn ok<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Owned, String> {
        match self.call(args)? {
            Owned::Error(e) => {
                let name = args
                    .first()
                    .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
                    .unwrap_or_default();
                Err(format!("{}: {name}: {e}", self.addr))
            }
            v => Ok(v),
        }
    }

    /// Sends `requests` (`count` encoded commands) in one write and reads their replies;
    /// the first error reply is an `Err`. Keep batches small enough that the replies fit
    /// the socket buffers while the requests are still being written.
    pub fn batch(&mut self, requests: &[u8], count: usize) -> Result<(), String> {
        self.stream
            .write_all(requests)
            .map_err(|e| format!("{}: write: {e}", self.addr))?;
        let mut first_err = None;
        for _ in 0..count {
            if let Owned::Error(e) = self.read()? {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(format!("{}: {e}", self.addr)),
            None => Ok(()),
        }
    }

    fn read(&mut self) -> Result<Owned, String> {
        loop {
            match reply::parse(&self.buf[self.start..self.end]) {
                Ok(Some((v, used))) => {
                    let owned = Owned::from(&v);
                    self.start += used;
                    return Ok(owned);
                }
                Ok(None) => {}
                Err(e) => return Err(format!("{}: {e}", self.addr)),
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let n = self.buf.len() * 2;
                self.buf.resize(n, 0);
            }
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(format!("{}: connection closed by the server", self.addr)),
                Ok(n) => self.end += n,
                Err(e) => return Err(format!("{}: read: {e}", self.addr)),
            }
        }
    }

    /// The socket, for the event loop. Only between whole replies (nothing buffered).
    pub(crate) fn take_stream(self) -> TcpStream {
        self.stream
    }

    /// The server's CPU time so far (`INFO cpu`: user + system seconds of its process);
    /// `None` if it does not report them.
    pub fn server_cpu(&mut self) -> Option<f64> {
        let Ok(Owned::Bulk(b)) = self.call(&["INFO", "cpu"]) else {
            return None;
        };
        parse_cpu(&String::from_utf8_lossy(&b))
    }

    /// The `# Server` section of INFO (for the JSON report); empty if the server has none.
    pub fn info_server(&mut self) -> String {
        match self.call(&["INFO", "server"]) {
            Ok(Owned::Bulk(b)) => String::from_utf8_lossy(&b).replace("\r\n", "\n"),
            _ => String::new(),
        }
    }
}

/// `used_cpu_user` + `used_cpu_sys` of an `INFO cpu` reply.
fn parse_cpu(info: &str) -> Option<f64> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Some(field("used_cpu_user")? + field("used_cpu_sys")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_user_plus_system() {
        let info = "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\n\
                    used_cpu_sys_children:9.000000\r\n";
        assert_eq!(parse_cpu(info), Some(3.75));
        assert_eq!(parse_cpu("# CPU\r\nused_cpu_sys:1.0\r\n"), None);
    }

    #[test]
    fn encodes_multibulk() {
        let mut out = Vec::new();
        encode(&mut out, &["SET", "k", ""]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
        let mut big = Vec::new();
        push_header(&mut big, b'$', 1_234_567);
        assert_eq!(big, b"$1234567\r\n");
    }
}
