//! The one command table. Each command is declared once, next to its implementation in
//! `commands/<family>.rs`, as a [`Command`]: name, arity, flags, key positions, docs and
//! handler. Dispatch, arity checks, COMMAND INFO/DOCS/GETKEYS and key extraction all read
//! these declarations; nothing repeats them.

use crate::exec::ctx::Ctx;
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

/// How a command uses each key it names: Redis's key-spec flags. ACL reads them (ACCESS
/// needs a read pattern; UPDATE, INSERT and DELETE a write one; none of them, any pattern)
/// and COMMAND INFO shows them.
pub mod key {
    pub const RO: u16 = 1 << 0;
    pub const RW: u16 = 1 << 1;
    pub const OW: u16 = 1 << 2;
    pub const RM: u16 = 1 << 3;
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    pub const INCOMPLETE: u16 = 1 << 8;
    pub const VARIABLE_FLAGS: u16 = 1 << 9;

    /// The combinations commands declare, named as Redis's key specs spell them.
    pub const RO_ACCESS: u16 = RO | ACCESS;
    pub const RW_ACCESS_DELETE: u16 = RW | ACCESS | DELETE;
    pub const RW_ACCESS_UPDATE: u16 = RW | ACCESS | UPDATE;
    pub const RW_ACCESS_INSERT: u16 = RW | ACCESS | INSERT;
    pub const RW_UPDATE: u16 = RW | UPDATE;
    pub const RW_INSERT: u16 = RW | INSERT;
    pub const RW_DELETE: u16 = RW | DELETE;
    pub const OW_UPDATE: u16 = OW | UPDATE;
    pub const OW_INSERT: u16 = OW | INSERT;
    pub const RM_DELETE: u16 = RM | DELETE;

    /// COMMAND INFO's names, in its order.
    pub const NAMES: &[(u16, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// How each key a call names is used ([`key`] flags).
#[derive(Clone, Copy)]
pub enum KeyUse {
    /// Not declared: read-only commands read (RO ACCESS), others read and update
    /// (RW ACCESS UPDATE), which asks ACL for the most.
    Derived,
    /// One entry per key in the order the command's key positions list them (Redis's key
    /// specs); the last entry covers every further key.
    Fixed(&'static [u16]),
    /// Decided by the arguments (SET ... GET, BITFIELD ... SET): the declared flags
    /// (COMMAND INFO), and the flags of the key at argv position `pos` for one call.
    Args(u16, fn(argv: &[Bytes], pos: usize) -> u16),
}

/// The pub/sub channels a command names, which ACL checks against a user's channel
/// patterns (Redis's getChannelsFromCommand). Unsubscribing names none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channels {
    None,
    /// argv[1] is a channel published to (PUBLISH, SPUBLISH).
    Publish,
    /// argv[1..] are channels subscribed to (SUBSCRIBE, SSUBSCRIBE).
    Subscribe,
    /// argv[1..] are patterns subscribed to (PSUBSCRIBE): each must be one of the user's
    /// channel patterns, letter for letter.
    Patterns,
}

/// ACL categories, as bits in the order of Redis's category table (ACL CAT lists them so).
pub mod cat {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const STRING: u32 = 1 << 7;
    pub const BITMAP: u32 = 1 << 8;
    pub const HYPERLOGLOG: u32 = 1 << 9;
    pub const GEO: u32 = 1 << 10;
    pub const STREAM: u32 = 1 << 11;
    pub const PUBSUB: u32 = 1 << 12;
    pub const ADMIN: u32 = 1 << 13;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
    pub const SCRIPTING: u32 = 1 << 20;
    /// On a declaration's `acl`: the command is not in its group's category (SORT is in
    /// the generic group but not in @keyspace).
    pub const NOT_GROUP: u32 = 1 << 31;

    /// Every category's name, bit `i` named by entry `i`.
    pub const NAMES: [&str; 21] = [
        "keyspace",
        "read",
        "write",
        "set",
        "sortedset",
        "list",
        "hash",
        "string",
        "bitmap",
        "hyperloglog",
        "geo",
        "stream",
        "pubsub",
        "admin",
        "fast",
        "slow",
        "blocking",
        "dangerous",
        "connection",
        "transaction",
        "scripting",
    ];

    /// The bit of a category name, in any case.
    pub fn by_name(name: &[u8]) -> Option<u32> {
        NAMES
            .iter()
            .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
            .map(|i| 1 << i)
    }

    /// The category of a doc group, if the group has one.
    pub fn of_group(group: &str) -> u32 {
        match group {
            "generic" => KEYSPACE,
            "string" => STRING,
            "bitmap" => BITMAP,
            "connection" => CONNECTION,
            "sorted-set" => SORTEDSET,
            "hash" => HASH,
            "set" => SET,
            "list" => LIST,
            "hyperloglog" => HYPERLOGLOG,
            "geo" => GEO,
            "stream" => STREAM,
            "transactions" => TRANSACTION,
            "scripting" => SCRIPTING,
            _ => 0,
        }
    }
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

/// One command (or one subcommand of a container such as CONFIG or CLIENT).
pub struct Command {
    /// Lower-case name; a subcommand's own name (e.g. "get" under "config").
    pub name: &'static str,
    /// Redis convention: N means exactly N arguments counting the name, -N at least N.
    /// A subcommand counts the container too (CONFIG GET is arity -3).
    pub arity: i32,
    pub flags: u32,
    pub keys: Keys,
    /// How it uses each of its keys (Redis's key-spec flags).
    pub key_use: KeyUse,
    /// The pub/sub channels it names.
    pub channels: Channels,
    /// ACL categories beyond those its flags and group give ([`cat`] bits; Redis's
    /// explicit acl_categories), and [`cat::NOT_GROUP`] to leave its group's out.
    pub acl: u32,
    /// Redis's doc group: "string", "generic", "connection", "server"...
    pub group: &'static str,
    pub summary: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    pub handler: Handler,
    pub subcommands: &'static [Command],
}

impl Command {
    /// Defaults for the fields most declarations leave alone; use with `..Command::DEFAULT`.
    pub const DEFAULT: Command = Command {
        name: "",
        arity: 1,
        flags: 0,
        keys: Keys::None,
        key_use: KeyUse::Derived,
        channels: Channels::None,
        acl: 0,
        group: "generic",
        summary: "",
        since: "1.0.0",
        complexity: "O(1)",
        handler: no_handler,
        subcommands: &[],
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

    /// ACL categories ([`cat`] bits), as Redis sets them: the declared ones, the group's
    /// (a container's subcommands carry it, not the container), and those its flags imply.
    pub fn acl_categories(&self) -> u32 {
        let mut c = self.acl & !cat::NOT_GROUP;
        if self.acl & cat::NOT_GROUP == 0 && self.subcommands.is_empty() {
            c |= cat::of_group(self.group);
        }
        if self.has(flags::WRITE) {
            c |= cat::WRITE;
        }
        // A read-only script command is not in @read: reading needs explicit permission.
        if self.has(flags::READONLY) && c & cat::SCRIPTING == 0 {
            c |= cat::READ;
        }
        if self.has(flags::ADMIN) {
            c |= cat::ADMIN | cat::DANGEROUS;
        }
        if self.has(flags::PUBSUB) {
            c |= cat::PUBSUB;
        }
        if self.has(flags::FAST) {
            c |= cat::FAST;
        }
        if self.has(flags::BLOCKING) {
            c |= cat::BLOCKING;
        }
        if c & cat::FAST == 0 {
            c |= cat::SLOW;
        }
        c
    }

    /// The categories' names with their `@`, in Redis's order (COMMAND INFO).
    pub fn acl_category_names(&self) -> Vec<String> {
        let c = self.acl_categories();
        (0..cat::NAMES.len())
            .filter(|i| c & (1 << i) != 0)
            .map(|i| format!("@{}", cat::NAMES[i]))
            .collect()
    }

    /// The key-spec flags of the key at argv position `pos`, the `nth` key found.
    pub fn key_flags(&self, argv: &[Bytes], nth: usize, pos: usize) -> u16 {
        match self.key_use {
            KeyUse::Derived if self.has(flags::READONLY) => key::RO_ACCESS,
            KeyUse::Derived => key::RW_ACCESS_UPDATE,
            KeyUse::Fixed(specs) => specs
                .get(nth)
                .or(specs.last())
                .copied()
                .unwrap_or(key::RW_ACCESS_UPDATE),
            KeyUse::Args(_, f) => f(argv, pos),
        }
    }
}

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
    use super::parse_i64;

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
