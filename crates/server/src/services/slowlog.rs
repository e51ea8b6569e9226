//! The slow log (SLOWLOG): the last `slowlog-max-len` commands that ran for at least
//! `slowlog-log-slower-than` microseconds (-1: none, 0: all), newest first, as Redis keeps
//! them. A command's time is what the command table measures for INFO commandstats: its
//! execution, not its I/O. The hot path pays one atomic load and a compare; building an
//! entry and taking the lock happen only for a command that qualifies.

use crate::exec::client::ClientInfo;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Arguments kept per entry; the last of them says how many more there were (Redis's
/// SLOWLOG_ENTRY_MAX_ARGC).
const MAX_ARGC: usize = 32;
/// Bytes kept per argument (Redis's SLOWLOG_ENTRY_MAX_STRING).
const MAX_STRING: usize = 128;

#[derive(Clone)]
pub struct Entry {
    pub id: u64,
    /// Unix seconds when it was logged.
    pub time: u64,
    pub micros: u64,
    pub argv: Vec<Bytes>,
    pub addr: String,
    pub name: Bytes,
}

pub struct SlowLog {
    entries: Mutex<VecDeque<Entry>>,
    next_id: AtomicU64,
    slower_than: AtomicI64,
    max_len: AtomicUsize,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            entries: Mutex::new(VecDeque::new()),
            next_id: AtomicU64::new(0),
            slower_than: AtomicI64::new(10_000),
            max_len: AtomicUsize::new(128),
        }
    }
}

impl SlowLog {
    /// Applies the two settings (at start and after CONFIG SET); a shorter log drops its
    /// oldest entries.
    pub fn configure(&self, slower_than: i64, max_len: usize) {
        self.slower_than.store(slower_than, Relaxed);
        self.max_len.store(max_len, Relaxed);
        self.entries.lock().truncate(max_len);
    }

    /// Logs command `fullname` (`argv` as the client sent it) if it ran long enough.
    /// `client` is None for a command a script called: Redis names its Lua client "?:0".
    #[inline]
    pub fn observe(
        &self,
        micros: u64,
        fullname: &str,
        argv: &[Bytes],
        redacted: u64,
        client: Option<&ClientInfo>,
    ) {
        let t = self.slower_than.load(Relaxed);
        if t >= 0 && micros >= t as u64 {
            self.push(micros, fullname, argv, redacted, client);
        }
    }

    #[cold]
    fn push(
        &self,
        micros: u64,
        fullname: &str,
        argv: &[Bytes],
        redacted: u64,
        client: Option<&ClientInfo>,
    ) {
        let max_len = self.max_len.load(Relaxed);
        // EXEC is not logged: the commands it ran are, one by one (transactions.rs).
        if max_len == 0 || fullname == "exec" {
            return;
        }
        let entry = Entry {
            id: self.next_id.fetch_add(1, Relaxed),
            time: crate::server::Server::now_unix(),
            micros,
            argv: kept_args(argv, redacted),
            addr: client.map_or_else(|| "?:0".to_string(), |c| c.addr.clone()),
            name: client
                .and_then(|c| c.name.lock().clone())
                .unwrap_or_default(),
        };
        let mut entries = self.entries.lock();
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// The newest `count` entries (all for None).
    pub fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let entries = self.entries.lock();
        let n = count.unwrap_or(entries.len()).min(entries.len());
        entries.iter().take(n).cloned().collect()
    }

    /// Entries kept (SLOWLOG LEN).
    pub fn entries(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

/// The arguments an entry keeps: at most MAX_ARGC, each cut to MAX_STRING bytes, with
/// the secrets the command redacted (bit i of `redacted`: argument i, see `Ctx::redact`)
/// replaced by "(redacted)" as Redis does.
fn kept_args(argv: &[Bytes], redacted: u64) -> Vec<Bytes> {
    let secret = |i: usize| i < 64 && redacted & (1 << i) != 0;
    let n = argv.len().min(MAX_ARGC);
    (0..n)
        .map(|i| {
            if n < argv.len() && i == n - 1 {
                Bytes::from(format!("... ({} more arguments)", argv.len() - n + 1))
            } else if secret(i) {
                Bytes::from_static(b"(redacted)")
            } else if argv[i].len() > MAX_STRING {
                let mut s = argv[i][..MAX_STRING].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", argv[i].len() - MAX_STRING).as_bytes(),
                );
                Bytes::from(s)
            } else {
                // A copy: the argument is a slice of the client's input buffer, which an
                // entry would otherwise keep whole (a slow command is often a large one).
                Bytes::copy_from_slice(&argv[i])
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<Bytes> {
        v.iter().map(|s| Bytes::from(s.to_string())).collect()
    }

    #[test]
    fn long_commands_and_arguments_are_cut_as_redis_cuts_them() {
        let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let kept = kept_args(&args(&refs), 0);
        assert_eq!(kept.len(), MAX_ARGC);
        assert_eq!(kept[30], "30");
        assert_eq!(kept[31], "... (9 more arguments)");
        let long = "A".repeat(130);
        let kept = kept_args(&args(&["set", "k", &long]), 0);
        assert_eq!(kept[2], format!("{}... (2 more bytes)", "A".repeat(128)));
    }

    #[test]
    fn passwords_are_redacted() {
        let kept = kept_args(
            &args(&["hello", "3", "AUTH", "u", "p", "SETNAME", "n"]),
            1 << 3 | 1 << 4,
        );
        assert_eq!(
            kept,
            args(&[
                "hello",
                "3",
                "AUTH",
                "(redacted)",
                "(redacted)",
                "SETNAME",
                "n"
            ])
        );
        let kept = kept_args(
            &args(&["config", "set", "maxmemory", "1", "requirepass", "x"]),
            1 << 5,
        );
        assert_eq!(
            kept,
            args(&[
                "config",
                "set",
                "maxmemory",
                "1",
                "requirepass",
                "(redacted)"
            ])
        );
    }
}
