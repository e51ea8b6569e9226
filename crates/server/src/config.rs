//! Configuration with Redis's names and syntax: a redis.conf-style file, `--name value`
//! arguments, and CONFIG GET/SET at run time. Each parameter is declared once in `PARAMS`.

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    /// A byte count accepting Redis's units (k, kb, m, mb, g, gb).
    Memory,
    Bool,
    Enum(&'static [&'static str]),
    Str,
    /// Parsed and re-rendered by a function of (current value, new value), for values with
    /// their own syntax (`notify-keyspace-events`, `client-output-buffer-limit`).
    Custom(fn(&str, &str) -> Result<String, String>),
}

pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    /// Settable with CONFIG SET (the others only at start).
    pub mutable: bool,
    pub help: &'static str,
}

const fn p(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    mutable: bool,
    help: &'static str,
) -> Param {
    Param {
        name,
        kind,
        default,
        mutable,
        help,
    }
}

const INT: Kind = Kind::Int {
    min: 0,
    max: i64::MAX,
};
// In Redis's order: its error message lists them so.
const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// Every parameter Strata knows. `threads` defaults to the number of cores (filled at start).
pub const PARAMS: &[Param] = &[
    p(
        "bind",
        Kind::Str,
        "127.0.0.1",
        false,
        "addresses to listen on, space separated",
    ),
    p(
        "port",
        Kind::Int { min: 0, max: 65535 },
        "6379",
        false,
        "TCP port",
    ),
    p(
        "threads",
        Kind::Int { min: 1, max: 256 },
        "0",
        false,
        "worker threads, each an event loop with its own connections (0 = one per core)",
    ),
    p(
        "worker-sched",
        Kind::Enum(&["batch", "normal"]),
        "batch",
        false,
        "scheduling policy of the worker threads: batch (SCHED_BATCH, a waking worker does \
         not preempt the running thread) or normal (SCHED_OTHER)",
    ),
    p(
        "protected-mode",
        Kind::Bool,
        "yes",
        true,
        "refuse non-loopback clients when no password is set",
    ),
    p(
        "requirepass",
        Kind::Str,
        "",
        true,
        "password clients must AUTH with",
    ),
    p(
        "maxclients",
        Kind::Int {
            min: 1,
            max: 1_000_000,
        },
        "10000",
        true,
        "maximum connected clients",
    ),
    p(
        "busy-reply-threshold",
        INT,
        "5000",
        true,
        "milliseconds a script runs before other clients get -BUSY",
    ),
    p(
        "snapshot-help-after-ms",
        INT,
        "50",
        true,
        "a background snapshot that captured nothing for this long (its thread runs \
         SCHED_IDLE, starved on a saturated machine) is helped by the worker threads; 0 = always",
    ),
    p(
        "timeout",
        INT,
        "0",
        true,
        "close a client idle this many seconds (0 = never)",
    ),
    p(
        "tcp-keepalive",
        INT,
        "300",
        true,
        "TCP keepalive interval in seconds",
    ),
    p(
        "databases",
        Kind::Int {
            min: 1,
            max: 1_000_000,
        },
        "16",
        false,
        "number of logical databases",
    ),
    p(
        "shards",
        Kind::Int {
            min: 1,
            max: 1 << 20,
        },
        "1024",
        false,
        "shards per database, rounded up to a power of two",
    ),
    p("dir", Kind::Str, "./data", true, "data directory"),
    p(
        "dbfilename",
        Kind::Str,
        "dump.rdb",
        true,
        "snapshot file name",
    ),
    p(
        "loglevel",
        Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
        "notice",
        true,
        "log verbosity",
    ),
    p(
        "logfile",
        Kind::Str,
        "",
        false,
        "log file (empty = standard output)",
    ),
    p(
        "daemonize",
        Kind::Enum(&["no"]),
        "no",
        false,
        "always no: run under a supervisor",
    ),
    p(
        "pidfile",
        Kind::Str,
        "",
        false,
        "file to write the process id to",
    ),
    p(
        "proto-max-bulk-len",
        Kind::Memory,
        "512mb",
        true,
        "largest bulk string a client may send",
    ),
    p(
        "client-query-buffer-limit",
        Kind::Memory,
        "1gb",
        true,
        "largest query buffer per client",
    ),
    p(
        "hz",
        Kind::Int { min: 1, max: 500 },
        "10",
        true,
        "background tasks (active expiry) per second",
    ),
    p(
        "maxmemory",
        Kind::Memory,
        "0",
        true,
        "memory limit (accounting and eviction arrive with the tiering work)",
    ),
    p(
        "maxmemory-policy",
        Kind::Enum(POLICIES),
        "noeviction",
        true,
        "eviction policy",
    ),
    p(
        "maxmemory-samples",
        Kind::Int { min: 1, max: 64 },
        "5",
        true,
        "keys sampled per eviction",
    ),
    p(
        "lfu-log-factor",
        INT,
        "10",
        true,
        "LFU counter logarithm factor",
    ),
    p(
        "lfu-decay-time",
        INT,
        "1",
        true,
        "LFU counter decay time in minutes",
    ),
    p(
        "save",
        Kind::Str,
        "3600 1 300 100 60 10000",
        true,
        "snapshot rules: <seconds> <changes> pairs (\"\" for none)",
    ),
    p(
        "appendonly",
        Kind::Bool,
        "yes",
        false,
        "journal every write in --dir (no: a pure cache)",
    ),
    p(
        "appendfsync",
        Kind::Enum(&["always", "everysec", "no"]),
        "everysec",
        true,
        "journal fsync policy",
    ),
    p(
        "notify-keyspace-events",
        Kind::Custom(crate::services::notify::normalize),
        "",
        true,
        "keyspace notification classes (Redis's flag letters K E g $ l s h z x e t m d n A)",
    ),
    p(
        "client-output-buffer-limit",
        Kind::Custom(crate::services::pubsub::normalize_buffer_limits),
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        true,
        "output buffer limits per client class: <class> <hard> <soft> <soft seconds>",
    ),
    p(
        "lazyfree-lazy-user-flush",
        Kind::Bool,
        "no",
        true,
        "FLUSHALL/FLUSHDB free memory in the background by default",
    ),
    p(
        "slowlog-log-slower-than",
        Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        "10000",
        true,
        "slow log threshold in microseconds",
    ),
    p("slowlog-max-len", INT, "128", true, "slow log length"),
    p(
        "hash-max-listpack-entries",
        INT,
        "128",
        true,
        "hashes up to this many fields use the compact listpack form",
    ),
    p(
        "hash-max-listpack-value",
        INT,
        "64",
        true,
        "... and fields and values up to this many bytes",
    ),
    p(
        "set-max-intset-entries",
        INT,
        "512",
        true,
        "sets of integers up to this many members use the compact intset form",
    ),
    p(
        "zset-max-listpack-entries",
        INT,
        "128",
        true,
        "sorted sets up to this many members use the compact listpack form",
    ),
    p(
        "zset-max-listpack-value",
        INT,
        "64",
        true,
        "... and members up to this many bytes",
    ),
    p(
        "list-max-listpack-size",
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        "-2",
        true,
        "list node size: entries (> 0) or -1..-5 for 4..64 KiB",
    ),
    p(
        "hll-sparse-max-bytes",
        Kind::Memory,
        "3000",
        true,
        "HyperLogLogs use the sparse form up to this many bytes",
    ),
    p(
        "list-compress-depth",
        INT,
        "0",
        true,
        "list nodes kept uncompressed at each end (0 = no compression)",
    ),
];

pub fn param(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// Parses Redis memory units: "100", "1k" (1000), "1kb" (1024), "5mb", "1gb".
pub fn parse_memory(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// Checks `value` against the parameter's kind and returns its canonical text, or the
/// reason it is refused (Redis's wording).
pub fn normalize(p: &Param, value: &str) -> Result<String, String> {
    match p.kind {
        Kind::Int { min, max } => {
            let n: i64 = value
                .parse()
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(n.to_string())
        }
        Kind::Memory => parse_memory(value)
            .map(|n| n.to_string())
            .ok_or_else(|| "argument must be a memory value".to_string()),
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Enum(choices) => {
            let v = value.to_ascii_lowercase();
            if choices.contains(&v.as_str()) {
                Ok(v)
            } else {
                Err(format!(
                    "argument(s) must be one of the following: {}",
                    choices.join(", ")
                ))
            }
        }
        Kind::Str => Ok(value.to_string()),
        Kind::Custom(f) => f(p.default, value),
    }
}

/// The live configuration. Readers on hot paths cache what they need and re-read when
/// `epoch` changes, so CONFIG SET costs them nothing until it happens.
pub struct Config {
    values: RwLock<BTreeMap<&'static str, String>>,
    epoch: AtomicU64,
    /// The file the server was started with (CONFIG REWRITE needs one).
    pub file: Option<String>,
}

impl Config {
    pub fn new(file: Option<String>) -> Config {
        Config {
            values: RwLock::new(
                PARAMS
                    .iter()
                    .map(|p| {
                        (
                            p.name,
                            normalize(p, p.default).unwrap_or_else(|_| p.default.to_string()),
                        )
                    })
                    .collect(),
            ),
            epoch: AtomicU64::new(0),
            file,
        }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Sets a parameter (start-up or CONFIG SET); `at_runtime` refuses immutable ones.
    pub fn set(&self, name: &str, value: &str, at_runtime: bool) -> Result<(), String> {
        let p = param(name).ok_or_else(|| format!("unknown option '{name}'"))?;
        if at_runtime && !p.mutable {
            return Err("can't set immutable config".into());
        }
        let v = match p.kind {
            Kind::Custom(f) => f(&self.get(p.name), value)?,
            _ => normalize(p, value)?,
        };
        self.values.write().insert(p.name, v);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    pub fn get(&self, name: &str) -> String {
        param(name)
            .and_then(|p| self.values.read().get(p.name).cloned())
            .unwrap_or_default()
    }

    /// A numeric parameter (Int or Memory kinds).
    pub fn get_u64(&self, name: &str) -> u64 {
        self.get(name).parse().unwrap_or(0)
    }

    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == "yes"
    }

    /// All (name, value) pairs whose name matches a glob pattern (CONFIG GET).
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let values = self.values.read();
        PARAMS
            .iter()
            .filter(|p| strata_engine::glob::matches(pattern, p.name.as_bytes(), true))
            .map(|p| (p.name, values.get(p.name).cloned().unwrap_or_default()))
            .collect()
    }

    /// Applies a redis.conf-style text: one `name value...` directive per line, `#` comments,
    /// values optionally quoted. Errors name the line, as Redis does.
    pub fn load_text(&self, text: &str) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words = split_directive(line)
                .ok_or_else(|| format!("line {}: unbalanced quotes in '{line}'", i + 1))?;
            let Some((name, rest)) = words.split_first() else {
                continue;
            };
            self.set(name, &rest.join(" "), false)
                .map_err(|e| format!("line {}: '{line}': {e}", i + 1))?;
        }
        Ok(())
    }
}

/// Splits a config line into words, honouring double and single quotes.
fn split_directive(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else {
            return Some(words);
        };
        let mut w = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            loop {
                match chars.next()? {
                    '\\' if c == '"' => match chars.next()? {
                        'n' => w.push('\n'),
                        't' => w.push('\t'),
                        other => w.push(other),
                    },
                    q if q == c => break,
                    other => w.push(other),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        words.push(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("512mb"), Some(512 << 20));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1GB"), Some(1 << 30));
        assert_eq!(parse_memory("12"), Some(12));
        assert_eq!(parse_memory("x"), None);
    }

    #[test]
    fn file_and_runtime_rules() {
        let c = Config::new(None);
        c.load_text("# comment\nport 7000\nrequirepass \"a b\"\nsave ''\n")
            .unwrap();
        assert_eq!(c.get("port"), "7000");
        assert_eq!(c.get("requirepass"), "a b");
        assert!(c.load_text("nonsense 1").unwrap_err().contains("line 1"));
        assert!(c.set("port", "1", true).is_err());
        assert!(c.set("maxclients", "x", true).is_err());
        c.set("maxclients", "5", true).unwrap();
        assert_eq!(c.get_u64("maxclients"), 5);
        assert_eq!(c.matching(b"max*").len(), 4);
        assert_eq!(c.get_u64("client-query-buffer-limit"), 1 << 30);
    }
}
