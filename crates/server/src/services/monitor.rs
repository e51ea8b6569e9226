//! MONITOR: every command a client, an EXEC or a script runs is sent to the monitoring
//! clients as one line, in Redis's format:
//!
//! ```text
//! +1700000000.123456 [0 127.0.0.1:5555] "SET" "k" "v"
//! ```
//!
//! (`lua` instead of the address for a script's calls). A command is shown once it ran,
//! so an EXEC's commands come before the EXEC; EVAL and FCALL show themselves when they
//! start, before their calls. Commands flagged admin or skip_monitor are not shown, and
//! arguments a command marks as secret (AUTH's password) read `(redacted)`. The request
//! path pays one relaxed load per command while nobody monitors.

use crate::exec::client::ClientInfo;
use crate::services::pubsub::BufferLimit;
use bytes::Bytes;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Who ran a command.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Client(&'a ClientInfo),
    Script,
}

#[derive(Default)]
pub struct Monitors {
    clients: RwLock<Vec<Arc<ClientInfo>>>,
    count: AtomicUsize,
}

impl Monitors {
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Makes `info` a monitor; false if it already was.
    pub fn add(&self, info: &Arc<ClientInfo>) -> bool {
        if info.monitor.swap(true, Ordering::Relaxed) {
            return false;
        }
        self.clients.write().push(info.clone());
        self.count.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// The client stops monitoring (RESET, disconnect).
    pub fn remove(&self, info: &ClientInfo) {
        if !info.monitor.swap(false, Ordering::Relaxed) {
            return;
        }
        self.clients.write().retain(|c| c.id != info.id);
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Sends the line of command `argv`, run in database `db`, to every monitor. Bit `i`
    /// of `redacted` hides argument `i`.
    pub fn feed(&self, db: usize, source: Source<'_>, argv: &[Bytes], redacted: u64) {
        let line = line(SystemTime::now(), db, source, argv, redacted);
        for m in self.clients.read().iter() {
            // Monitors are normal clients: no output limit by default, as in Redis.
            m.send(BufferLimit::default(), |buf, _| {
                buf.extend_from_slice(&line)
            });
        }
    }
}

/// One MONITOR line, a RESP simple string.
pub fn line(
    at: SystemTime,
    db: usize,
    source: Source<'_>,
    argv: &[Bytes],
    redacted: u64,
) -> Vec<u8> {
    let t = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut s = format!("+{}.{:06} [{db} ", t.as_secs(), t.subsec_micros());
    match source {
        Source::Script => s.push_str("lua"),
        // Redis names a Unix socket client by the socket's path: `unix:/path`.
        Source::Client(c) if c.unix => {
            s.push_str("unix:");
            s.push_str(c.addr.strip_suffix(":0").unwrap_or(&c.addr));
        }
        Source::Client(c) => s.push_str(&c.addr),
    }
    s.push(']');
    let mut out = s.into_bytes();
    for (i, a) in argv.iter().enumerate() {
        out.push(b' ');
        if i < 64 && redacted & (1 << i) != 0 {
            quote(&mut out, b"(redacted)");
        } else {
            quote(&mut out, a);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Redis's sdscatrepr: a double-quoted string with C escapes and \xHH for the rest of
/// what is not printable ASCII.
fn quote(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', c]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn lines_quote_and_redact_as_redis() {
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_042);
        let info = ClientInfo::new(7, "127.0.0.1:5555".into(), "127.0.0.1:6379".into(), -1);
        let argv = [
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k \"q\"\\"),
            Bytes::from_static(b"a\r\n\t\x07\x08\x00\xff"),
        ];
        let l = line(at, 3, Source::Client(&info), &argv, 0);
        assert_eq!(
            String::from_utf8(l).unwrap(),
            "+1700000000.000042 [3 127.0.0.1:5555] \"SET\" \"k \\\"q\\\"\\\\\" \"a\\r\\n\\t\\a\\b\\x00\\xff\"\r\n"
        );
        let argv = [Bytes::from_static(b"auth"), Bytes::from_static(b"pw")];
        let l = line(at, 0, Source::Script, &argv, 0b10);
        assert_eq!(
            String::from_utf8(l).unwrap(),
            "+1700000000.000042 [0 lua] \"auth\" \"(redacted)\"\r\n"
        );
    }
}
