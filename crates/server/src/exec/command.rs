//! The one command table. Each command is declared once, next to its implementation in
//! `commands/<family>.rs`, as a [`Command`]: name, arity, flags, key positions, docs and
//! handler. Dispatch, arity checks, COMMAND INFO/DOCS/GETKEYS and key extraction all read
//! these declarations; nothing repeats them.

use crate::exec::client::Client;
use crate::exec::ctx::Ctx;
use crate::server::Server;
use bytes::Bytes;
use std::borrow::Cow;
use strata_engine::WrongType;

/// Command flags, named as COMMAND INFO names them.
pub mod flags {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const FAST: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const MAY_REPLICATE: u32 = 1 << 13;
    pub const NO_MULTI: u32 = 1 << 14;
    pub const MOVABLEKEYS: u32 = 1 << 15;
    pub const ALLOW_BUSY: u32 = 1 << 16;

    // Strata's own flags, which COMMAND INFO does not show: what the request path needs to
    // know of a command, so that no list of command names lives outside the declarations.
    /// Runs while a RESP2 client is subscribed (PING, the (un)subscribe commands, QUIT,
    /// RESET).
    pub const SUBSCRIBED: u32 = 1 << 24;
    /// Runs at once inside MULTI instead of being queued (EXEC, DISCARD, MULTI, WATCH,
    /// QUIT, RESET).
    pub const NOT_QUEUED: u32 = 1 << 25;
    /// Reaches keys it does not name, or keys of other databases (FLUSHALL, KEYS, MOVE,
    /// SORT ... BY...): a write of it holds every shard.
    pub const ALL_SHARDS: u32 = 1 << 26;

    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MULTI, "no_multi"),
        (MOVABLEKEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// Where a command's keys are in its argv (argv[0] is the command name).
#[derive(Clone, Copy, Debug)]
pub enum Keys {
    None,
    /// Redis's legacy (first, last, step); a negative `last` counts from the end
    /// (-1 = the last argument).
    Range {
        first: i32,
        last: i32,
        step: i32,
    },
    /// Computed from the arguments (BITOP, LCS...). Flag the command MOVABLEKEYS.
    Custom(fn(&[Bytes]) -> Vec<usize>),
}

/// A command's result: the handler wrote its reply into `ctx.out`, or failed with an
/// error that dispatch writes.
pub type CmdResult = Result<(), CmdError>;
pub type Handler = fn(&mut Ctx<'_>) -> CmdResult;
/// The flags of one call of a command, from its declared flags and its arguments.
pub type CallFlags = fn(&Server, &Client, u32, &[Bytes]) -> u32;

/// One command (or one subcommand of a container such as CONFIG or CLIENT).
pub struct Command {
    /// Lower-case name; a subcommand's own name (e.g. "get" under "config").
    pub name: &'static str,
    /// Redis convention: N means exactly N arguments counting the name, -N at least N.
    /// A subcommand counts the container too (CONFIG GET is arity -3).
    pub arity: i32,
    pub flags: u32,
    pub keys: Keys,
    /// Redis's doc group: "string", "generic", "connection", "server"...
    pub group: &'static str,
    pub summary: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    pub handler: Handler,
    pub subcommands: &'static [Command],
    /// For a command whose flags depend on the call (a script's declared flags, EXEC's
    /// queued commands): the flags of one call, given the declared `flags`, as Redis's
    /// getCommandFlags. Admission reads them through `admit::call_flags`.
    pub call_flags: Option<CallFlags>,
}

impl Command {
    /// Defaults for the fields most declarations leave alone; use with `..Command::DEFAULT`.
    pub const DEFAULT: Command = Command {
        name: "",
        arity: 1,
        flags: 0,
        keys: Keys::None,
        group: "generic",
        summary: "",
        since: "1.0.0",
        complexity: "O(1)",
        handler: no_handler,
        subcommands: &[],
        call_flags: None,
    };

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// Positions of the key arguments in `argv`.
    pub fn key_positions(&self, argv: &[Bytes]) -> Vec<usize> {
        let mut v = Vec::new();
        self.for_each_key_position(argv, |i| v.push(i));
        v
    }

    /// Calls `f` with each position `key_positions` lists, without building the list (a
    /// write plans its locks this way on every call).
    pub fn for_each_key_position(&self, argv: &[Bytes], mut f: impl FnMut(usize)) {
        match self.keys {
            Keys::None => {}
            Keys::Range { first, last, step } => {
                let argc = argv.len() as i32;
                let last = if last < 0 { argc + last } else { last };
                if first <= 0 || step <= 0 {
                    return;
                }
                for i in (first..=last.min(argc - 1)).step_by(step as usize) {
                    f(i as usize);
                }
            }
            Keys::Custom(g) => g(argv).into_iter().for_each(f),
        }
    }

    /// ACL categories, derived from flags and group as Redis derives most of them, listed
    /// in the order of Redis's category table (COMMAND INFO shows them so).
    pub fn acl_categories(&self) -> Vec<&'static str> {
        let group = match self.group {
            "generic" => "@keyspace",
            "string" => "@string",
            "bitmap" => "@bitmap",
            "connection" => "@connection",
            "sorted-set" => "@sortedset",
            "hash" => "@hash",
            "set" => "@set",
            "list" => "@list",
            "hyperloglog" => "@hyperloglog",
            "geo" => "@geo",
            "stream" => "@stream",
            _ => "",
        };
        let has = |cat: &str| match cat {
            "@read" => self.has(flags::READONLY),
            "@write" => self.has(flags::WRITE),
            "@pubsub" => self.has(flags::PUBSUB),
            "@admin" | "@dangerous" => self.has(flags::ADMIN),
            "@fast" => self.has(flags::FAST),
            "@slow" => !self.has(flags::FAST),
            "@blocking" => self.has(flags::BLOCKING),
            // A container (CONFIG, XINFO...) is in no group category: its subcommands are.
            other => other == group && self.subcommands.is_empty(),
        };
        ACL_CATEGORY_ORDER
            .iter()
            .copied()
            .filter(|c| has(c))
            .collect()
    }
}

/// Redis's ACL categories in the order of its ACLCommandCategories table.
const ACL_CATEGORY_ORDER: &[&str] = &[
    "@keyspace",
    "@read",
    "@write",
    "@set",
    "@sortedset",
    "@list",
    "@hash",
    "@string",
    "@bitmap",
    "@hyperloglog",
    "@geo",
    "@stream",
    "@pubsub",
    "@admin",
    "@fast",
    "@slow",
    "@blocking",
    "@dangerous",
    "@connection",
    "@transaction",
    "@scripting",
];

fn no_handler(ctx: &mut Ctx<'_>) -> CmdResult {
    Err(CmdError::Custom(format!(
        "ERR unknown command '{}'",
        String::from_utf8_lossy(&ctx.argv[0])
    )))
}

/// Parses like Redis's string2ll: optional '-', digits, no '+', no leading zeros or spaces.
pub use strata_engine::int::parse_i64;

/// A command error: the full error line without the leading '-' (e.g. "ERR syntax error").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdError {
    Static(&'static str),
    Custom(String),
}

impl CmdError {
    pub const WRONG_TYPE: CmdError =
        CmdError::Static("WRONGTYPE Operation against a key holding the wrong kind of value");
    pub const SYNTAX: CmdError = CmdError::Static("ERR syntax error");
    pub const NOT_INTEGER: CmdError =
        CmdError::Static("ERR value is not an integer or out of range");
    pub const NOT_FLOAT: CmdError = CmdError::Static("ERR value is not a valid float");
    pub const OVERFLOW: CmdError = CmdError::Static("ERR increment or decrement would overflow");
    pub const NO_SUCH_KEY: CmdError = CmdError::Static("ERR no such key");
    pub const DB_RANGE: CmdError = CmdError::Static("ERR DB index is out of range");
    pub const INVALID_EXPIRE: CmdError =
        CmdError::Static("ERR invalid expire time in 'set' command");

    pub fn text(&self) -> Cow<'_, str> {
        match self {
            CmdError::Static(s) => Cow::Borrowed(s),
            CmdError::Custom(s) => Cow::Borrowed(s.as_str()),
        }
    }

    /// "ERR <msg>"
    pub fn err(msg: impl std::fmt::Display) -> CmdError {
        CmdError::Custom(format!("ERR {msg}"))
    }

    /// Redis's error for a wrong argument count: "ERR wrong number of arguments for 'get' command".
    pub fn arity(fullname: &str) -> CmdError {
        CmdError::Custom(format!(
            "ERR wrong number of arguments for '{fullname}' command"
        ))
    }
}

impl From<strata_engine::embedded::Error> for CmdError {
    fn from(e: strata_engine::embedded::Error) -> Self {
        use strata_engine::embedded::Error;
        match e {
            Error::WrongType => CmdError::WRONG_TYPE,
            Error::NotInteger => CmdError::NOT_INTEGER,
            Error::Overflow => CmdError::OVERFLOW,
            Error::OutOfMemory => CmdError::Static(crate::services::evict::OOM),
        }
    }
}

impl From<WrongType> for CmdError {
    fn from(_: WrongType) -> Self {
        CmdError::WRONG_TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_i64, Command};

    /// As in Redis, a container is in no group's category; its subcommands are.
    #[test]
    fn containers_take_no_group_category() {
        const SUB: Command = Command {
            name: "sub",
            group: "stream",
            ..Command::DEFAULT
        };
        let container = Command {
            name: "box",
            group: "stream",
            subcommands: &[SUB],
            ..Command::DEFAULT
        };
        assert_eq!(container.acl_categories(), ["@slow"]);
        assert_eq!(SUB.acl_categories(), ["@stream", "@slow"]);
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"-",
            b"9223372036854775808",
            b"1.0",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", bad);
        }
    }
}
