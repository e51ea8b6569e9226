//! RESP on the wire, for differential.rs, protocol.rs and the tests that send without
//! reading: request encoding, redis-cli style argument splitting, a reader of one complete
//! RESP2/RESP3 reply, and reply display.

use super::Proc;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

/// One complete reply as it came off the wire: its exact bytes, its type byte (`+ - : $ *
/// _ , # ! = ( % ~ >`; for a reply preceded by a RESP3 attribute, the type of the reply
/// itself), and for aggregates its elements (a map's keys and values alternate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawReply {
    pub raw: Vec<u8>,
    pub kind: u8,
    pub elems: Vec<RawReply>,
}

impl RawReply {
    pub fn is_aggregate(&self) -> bool {
        matches!(self.kind, b'*' | b'~' | b'%' | b'>') && !self.raw.starts_with(b"*-1\r\n")
    }

    /// The raw bytes, escaped for a one-line message.
    pub fn shown(&self) -> String {
        show(&self.raw)
    }
}

/// Encodes a command as a RESP multibulk request.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Bytes escaped for display: printable ASCII as is, `\r \n \t \" \\`, others as `\xHH`.
/// Long texts are cut, with the total length noted.
pub fn show(bytes: &[u8]) -> String {
    const MAX: usize = 400;
    let mut s = String::from("\"");
    for &b in &bytes[..bytes.len().min(MAX)] {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('"');
    if bytes.len() > MAX {
        s.push_str(&format!("... ({} bytes)", bytes.len()));
    }
    s
}

/// Quotes one argument the way redis-cli would accept it back (for printing a command).
pub fn quote_arg(a: &[u8]) -> String {
    let plain = !a.is_empty()
        && a.iter()
            .all(|&b| b.is_ascii_graphic() && b != b'"' && b != b'\'' && b != b'\\');
    if plain {
        String::from_utf8_lossy(a).into_owned()
    } else {
        let mut s = show(a);
        if a.len() > 400 {
            s = format!("<{} bytes>", a.len());
        }
        s
    }
}

/// Splits a line into arguments with redis-cli's rules (`sdssplitargs`): whitespace
/// separates; "double quotes" take `\n \r \t \b \a \\ \" \xHH` escapes; 'single quotes'
/// take only `\'`; a closing quote must be followed by whitespace or the end. `None` on
/// unbalanced quotes. (The server's inline-request splitter, `strata_resp::split_args`.)
pub fn split_args(line: &str) -> Option<Vec<Vec<u8>>> {
    strata_resp::split_args(line.as_bytes())
}

/// Reads exactly one complete RESP2/RESP3 reply. Errors on EOF, timeout or malformed input.
pub fn read_reply<R: BufRead>(r: &mut R) -> std::io::Result<RawReply> {
    let mut raw = Vec::new();
    let (kind, elems) = read_into(r, &mut raw, 0)?;
    Ok(RawReply { raw, kind, elems })
}

fn bad(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg)
}

fn read_into<R: BufRead>(
    r: &mut R,
    raw: &mut Vec<u8>,
    depth: usize,
) -> std::io::Result<(u8, Vec<RawReply>)> {
    if depth > 64 {
        return Err(bad("reply nested too deep".into()));
    }
    let start = raw.len();
    let n = r.read_until(b'\n', raw)?;
    if n == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    let line = &raw[start..];
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err(bad(format!("malformed reply line {}", show(line))));
    }
    let kind = line[0];
    let body = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
    let len = || -> std::io::Result<i64> {
        body.parse::<i64>()
            .ok()
            .filter(|n| (-1..=1 << 30).contains(n))
            .ok_or_else(|| bad(format!("bad length in {}", show(&raw[start..]))))
    };
    match kind {
        b'+' | b'-' | b':' | b',' | b'#' | b'(' => Ok((kind, Vec::new())),
        b'_' if body.is_empty() => Ok((kind, Vec::new())),
        b'$' | b'=' | b'!' => {
            let n = len()?;
            if n >= 0 {
                let at = raw.len();
                raw.resize(at + n as usize + 2, 0);
                r.read_exact(&mut raw[at..])?;
                if !raw.ends_with(b"\r\n") {
                    return Err(bad(format!(
                        "bulk not ended by CRLF: {}",
                        show(&raw[start..])
                    )));
                }
            } else if kind != b'$' {
                return Err(bad(format!("negative length in {}", show(&raw[start..]))));
            }
            Ok((kind, Vec::new()))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = len()?;
            if n < 0 && kind != b'*' {
                return Err(bad(format!("negative count in {}", show(&raw[start..]))));
            }
            let count = if matches!(kind, b'%' | b'|') {
                2 * n.max(0)
            } else {
                n.max(0)
            };
            let mut elems = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let at = raw.len();
                let (k, e) = read_into(r, raw, depth + 1)?;
                elems.push(RawReply {
                    raw: raw[at..].to_vec(),
                    kind: k,
                    elems: e,
                });
            }
            if kind == b'|' {
                // An attribute annotates the reply that follows it: that is the reply.
                return read_into(r, raw, depth + 1);
            }
            Ok((kind, elems))
        }
        _ => Err(bad(format!("unknown reply type {}", show(&raw[start..])))),
    }
}

/// A connection that sends commands and reads one reply each.
pub struct RespConn {
    pub name: &'static str,
    reader: BufReader<TcpStream>,
}

impl RespConn {
    pub fn new(p: &Proc) -> RespConn {
        RespConn {
            name: p.name,
            reader: BufReader::new(p.raw()),
        }
    }

    pub fn stream(&mut self) -> &mut TcpStream {
        self.reader.get_mut()
    }

    /// Sends raw bytes without reading.
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.reader.get_mut().write_all(bytes)
    }

    pub fn read(&mut self) -> std::io::Result<RawReply> {
        read_reply(&mut self.reader)
    }

    /// Sends a command and reads its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<RawReply> {
        self.send(&encode_command(args))?;
        self.read()
    }
}
