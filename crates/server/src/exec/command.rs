//! The one command table. Each command is declared once, next to its implementation in
//! `commands/<family>.rs`, as a [`Command`]: name, arity, flags, key positions, docs and
//! handler. Dispatch, arity checks, COMMAND INFO/DOCS/GETKEYS and key extraction all read
//! these declarations; nothing repeats them.

use crate::exec::client::Client;
use crate::exec::ctx::Ctx;
pub use crate::exec::keyspec::{ks, Begin, Find, KeyAt, KeyShape, KeySpec};
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
    pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
    pub const NO_ASYNC_LOADING: u32 = 1 << 18;

    // Strata's own flags, which COMMAND INFO does not show: what the request path needs to
    // know of a command, so that no list of command names lives outside the declarations.
    /// Runs while a RESP2 client is subscribed (PING, the (un)subscribe commands, QUIT,
    /// RESET).
    pub const SUBSCRIBED: u32 = 1 << 24;
    /// Runs at once inside MULTI instead of being queued (EXEC, DISCARD, MULTI, WATCH,
    /// QUIT, RESET).
    pub const NOT_QUEUED: u32 = 1 << 25;
    /// Reaches keys it does not name in other databases too (FLUSHALL, MOVE, COPY ... DB,
    /// SWAPDB): a write of it holds every shard.
    pub const ALL_SHARDS: u32 = 1 << 26;
    /// Reaches keys it does not name, in its own database only (FLUSHDB, KEYS, SORT ...
    /// BY...): a write of it holds every shard of that database, and no other (whose
    /// shards an idle database does not have: `strata_engine::Db::is_allocated`).
    pub const DB_SHARDS: u32 = 1 << 30;
    /// Runs only where `enable-debug-command` allows the client (DEBUG): refused before
    /// anything else is checked, as Redis refuses its protected commands.
    pub const PROTECTED: u32 = 1 << 27;
    /// On a container: its subcommands are how Strata declares one Redis command whose
    /// own parsing reads argv[1] (DEBUG). COMMAND shows the command alone, and a
    /// subcommand given a wrong number of arguments gets Redis's "unknown subcommand or
    /// wrong number of arguments" error.
    pub const OPAQUE: u32 = 1 << 28;
    /// Reads only whether its keys exist, when they expire, and their types (EXISTS, TTL,
    /// TYPE): a cold key is answered from the tier's index, so reading ahead of it reads
    /// no value.
    pub const PRESENCE: u32 = 1 << 29;

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
        // MAY_REPLICATE acts (CLIENT PAUSE WRITE holds it) but Redis does not list it.
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLEKEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// A command's own code finding its keys in argv: it calls the sink with each key's
/// position and key-spec flags, in order.
pub type KeyFinder = fn(&[Bytes], &mut dyn FnMut(KeyAt));

/// Where a command's keys are in its argv (argv[0] is the command name), and what it
/// does to them.
#[derive(Clone, Copy, Debug)]
pub enum Keys {
    None,
    /// Redis's legacy (first, last, step); a negative `last` counts from the end
    /// (-1 = the last argument). Its one key spec says RW/update for a write, RO/access
    /// otherwise.
    Range {
        first: i32,
        last: i32,
        step: i32,
    },
    /// Redis 7's key specs: keys are found with them, COMMAND INFO shows them.
    Specs(&'static [KeySpec]),
    /// Keys, or their flags, only the command's parsing knows (SORT's STORE, SET's GET),
    /// with the specs COMMAND INFO shows.
    Custom(KeyFinder, &'static [KeySpec]),
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
    /// The pub/sub channels it names.
    pub channels: Channels,
    /// Redis's doc group: "string", "generic", "connection", "server"...
    pub group: &'static str,
    pub summary: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    /// The arguments COMMAND DOCS lists, in the notation of `exec::docs`.
    pub args: &'static str,
    /// Redis's command tips (COMMAND INFO): how a cluster client should route it, whether
    /// its output is deterministic.
    pub tips: &'static [&'static str],
    /// ACL categories beyond those its flags give, instead of its group's (Redis declares
    /// them by hand where they differ: SORT is @list @set @sortedset @dangerous).
    pub acl: &'static [&'static str],
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
        channels: Channels::None,
        group: "generic",
        summary: "",
        since: "1.0.0",
        complexity: "O(1)",
        args: "",
        tips: &[],
        acl: &[],
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
                if first <= 0 || step <= 0 {
                    return;
                }
                let argc = argv.len() as i32;
                let last = if last < 0 { argc + last } else { last }.min(argc - 1);
                // A plain loop: a stepped inclusive range costs several times more per
                // call, and a restricted user's ACL check runs this for every command.
                let mut i = first;
                while i <= last {
                    f(i as usize);
                    i += step;
                }
            }
            Keys::Specs(specs) => {
                for s in specs.iter().filter(|s| s.flags & ks::NOT_KEY == 0) {
                    s.for_each(argv, &mut f);
                }
            }
            Keys::Custom(g, _) => g(argv, &mut |k| f(k.pos)),
        }
    }

    /// The key specs COMMAND INFO shows: the declared ones, or the one a legacy range
    /// stands for.
    pub fn key_specs(&self) -> Cow<'static, [KeySpec]> {
        match self.keys {
            Keys::None => Cow::Borrowed(&[]),
            Keys::Range { first, last, step } => {
                let flags = self.range_flags();
                let lastkey = if last < 0 { last } else { last - first };
                Cow::Owned(vec![KeySpec::range(flags, first, lastkey, step)])
            }
            Keys::Specs(specs) | Keys::Custom(_, specs) => Cow::Borrowed(specs),
        }
    }

    /// The flags of the key spec a legacy range stands for.
    fn range_flags(&self) -> u16 {
        if self.has(flags::WRITE) {
            ks::RW | ks::UPDATE
        } else {
            ks::RO | ks::ACCESS
        }
    }

    /// The keys in `argv` with their flags (COMMAND GETKEYSANDFLAGS).
    pub fn keys_and_flags(&self, argv: &[Bytes]) -> Vec<KeyAt> {
        let mut v = Vec::new();
        self.for_each_key_and_flags(argv, |k| v.push(k));
        v
    }

    /// Calls `f` with each key in `argv` and its flags, in `keys_and_flags`'s order,
    /// without allocating (ACL checks this for every command of a restricted user).
    pub fn for_each_key_and_flags(&self, argv: &[Bytes], mut f: impl FnMut(KeyAt)) {
        match self.keys {
            Keys::None => {}
            Keys::Range { .. } => {
                let flags = self.range_flags();
                self.for_each_key_position(argv, |pos| f(KeyAt { pos, flags }));
            }
            Keys::Specs(specs) => {
                for s in specs.iter().filter(|s| s.flags & ks::NOT_KEY == 0) {
                    s.for_each(argv, |pos| {
                        f(KeyAt {
                            pos,
                            flags: s.flags,
                        })
                    });
                }
            }
            Keys::Custom(g, _) => g(argv, &mut f),
        }
    }

    /// Where the keys are when their place is fixed (`KeyShape`); `for_each_key_and_flags`
    /// finds the same keys with the same flags.
    pub fn key_shape(&self) -> KeyShape {
        match self.keys {
            Keys::None => KeyShape::None,
            Keys::Range { first, last, .. } if first > 0 && last == first => KeyShape::One(KeyAt {
                pos: first as usize,
                flags: self.range_flags(),
            }),
            Keys::Range { .. } => KeyShape::Walk,
            Keys::Specs(specs) => KeyShape::of_specs(specs),
            Keys::Custom(_, specs) => match KeyShape::of_specs(specs) {
                KeyShape::One(k) => KeyShape::OneVarying(k.pos),
                _ => KeyShape::Walk,
            },
        }
    }

    /// Whether the command has keys at all (not only channels flagged NOT_KEY).
    pub fn has_keys(&self) -> bool {
        self.key_specs().iter().any(|s| s.flags & ks::NOT_KEY == 0)
    }

    /// Whether the command is in ACL category `cat` ("@read"): the declared ones, or the
    /// group's (not for a container, whose subcommands carry it), and those Redis derives
    /// from flags (setImplicitACLCategories: @read only outside @scripting).
    fn in_acl_category(&self, cat: &str) -> bool {
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
            "scripting" => "@scripting",
            "transactions" => "@transaction",
            _ => "",
        };
        let declared = |cat: &str| {
            if self.acl.is_empty() {
                self.subcommands.is_empty() && cat == group
            } else {
                self.acl.contains(&cat)
            }
        };
        match cat {
            "@read" => self.has(flags::READONLY) && !declared("@scripting"),
            "@write" => self.has(flags::WRITE),
            "@pubsub" => self.has(flags::PUBSUB),
            "@admin" | "@dangerous" => self.has(flags::ADMIN) || declared(cat),
            "@fast" => self.has(flags::FAST),
            "@slow" => !self.has(flags::FAST),
            "@blocking" => self.has(flags::BLOCKING),
            other => declared(other),
        }
    }

    /// ACL categories, listed in the order of Redis's category table (COMMAND INFO shows
    /// them so).
    pub fn acl_categories(&self) -> Vec<&'static str> {
        ACL_CATEGORIES
            .iter()
            .copied()
            .filter(|c| self.in_acl_category(c))
            .collect()
    }

    /// The same categories as bits, bit `i` for `ACL_CATEGORIES[i]` (the table keeps them
    /// so for ACL rules).
    pub fn acl_category_bits(&self) -> u32 {
        ACL_CATEGORIES
            .iter()
            .enumerate()
            .filter(|(_, c)| self.in_acl_category(c))
            .fold(0, |bits, (i, _)| bits | 1 << i)
    }
}

/// Redis's ACL categories in the order of its ACLCommandCategories table (ACL CAT lists
/// them so).
pub const ACL_CATEGORIES: &[&str] = &[
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

/// The bit of an ACL category named without its `@`, in any case (`+@read`, ACL CAT read).
pub fn acl_category_bit(name: &[u8]) -> Option<u32> {
    ACL_CATEGORIES
        .iter()
        .position(|c| c.as_bytes()[1..].eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
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
