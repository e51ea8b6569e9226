//! The string commands: GET SET SETNX SETEX PSETEX MGET MSET MSETNX GETSET GETDEL GETEX
//! APPEND STRLEN INCR DECR INCRBY DECRBY INCRBYFLOAT GETRANGE SUBSTR SETRANGE LCS.
//! Semantics, argument checks and error texts follow Redis 7.0's t_string.c. The bit
//! commands (SETBIT, BITCOUNT, BITFIELD...) live in `bitmap.rs`. Here: the declarations
//! and the helpers the family (and the bit commands) share; the handlers are in `set`
//! (the GET and SET family), `numbers` (the counters), `ranges` (APPEND STRLEN GETRANGE
//! SETRANGE) and `lcs`.
//!
//! Lookups mirror Redis's flavours: `lookupKeyRead` (counts a hit or miss, touches the
//! access time) is `Locked::get`; `lookupKeyWrite` (no statistics) is `peek`/`contains`.

mod lcs;
mod numbers;
mod ranges;
mod set;

use crate::exec::command::{flags, ks, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use std::cell::Cell;

use lcs::lcs;
use numbers::{decr, decrby, incr, incrby, incrbyfloat};
use ranges::{append, getrange, setrange, strlen};
use set::{get, getdel, getex, getset, mget, mset, msetnx, psetex, set, set_keys, setex, setnx};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};

const GETRANGE_COMPLEXITY: &str = "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.";

pub const COMMANDS: &[Command] = &[
    Command {
    name: "get",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "string",
    summary: "Get the value of a key",
    since: "1.0.0",
    args: "key#key",
    handler: get,
    ..Command::DEFAULT
},
    Command {
    name: "set",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Custom(
        set_keys,
        &[KeySpec::range(
            ks::RW | ks::ACCESS | ks::UPDATE | ks::VARIABLE_FLAGS,
            1,
            0,
            1,
        )],
    ),
    group: "string",
    summary: "Set the string value of a key",
    since: "1.0.0",
    args: "key#key value [condition=(NX | XX)] [GET] [expiration=(EX:seconds#int | PX:milliseconds#int | EXAT:unix-time-seconds#time | PXAT:unix-time-milliseconds#time | KEEPTTL)]",
    handler: set,
    ..Command::DEFAULT
},
    Command {
    name: "setnx",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::INSERT, 1, 0, 1),
    ]),
    group: "string",
    summary: "Set the value of a key, only if the key does not exist",
    since: "1.0.0",
    args: "key#key value",
    handler: setnx,
    ..Command::DEFAULT
},
    Command {
    name: "setex",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Set the value and expiration of a key",
    since: "2.0.0",
    args: "key#key seconds#int value",
    handler: setex,
    ..Command::DEFAULT
},
    Command {
    name: "psetex",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Set the value and expiration in milliseconds of a key",
    since: "2.6.0",
    args: "key#key milliseconds#int value",
    handler: psetex,
    ..Command::DEFAULT
},
    Command {
    name: "mget",
    arity: -2,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Range {
            first: 1,
            last: -1,
            step: 1,
        },
    group: "string",
    summary: "Get the values of all the given keys",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys to retrieve.",
    tips: &["request_policy:multi_shard"],
    args: "key#key...",
    handler: mget,
    ..Command::DEFAULT
},
    Command {
    name: "mset",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, -1, 2),
    ]),
    group: "string",
    summary: "Set multiple keys to multiple values",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    tips: &["request_policy:multi_shard", "response_policy:all_succeeded"],
    args: "key_value=(key#key value)...",
    handler: mset,
    ..Command::DEFAULT
},
    Command {
    name: "msetnx",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::INSERT, 1, -1, 2),
    ]),
    group: "string",
    summary: "Set multiple keys to multiple values, only if none of the keys exist",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    tips: &["request_policy:multi_shard", "response_policy:agg_min"],
    args: "key_value=(key#key value)...",
    handler: msetnx,
    ..Command::DEFAULT
},
    Command {
    name: "getset",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Set the string value of a key and return its old value",
    since: "1.0.0",
    args: "key#key value",
    handler: getset,
    ..Command::DEFAULT
},
    Command {
    name: "getdel",
    arity: 2,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Get the value of a key and delete the key",
    since: "6.2.0",
    args: "key#key",
    handler: getdel,
    ..Command::DEFAULT
},
    Command {
    name: "getex",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Get the value of a key and optionally set its expiration",
    since: "6.2.0",
    args: "key#key [expiration=(EX:seconds#int | PX:milliseconds#int | EXAT:unix-time-seconds#time | PXAT:unix-time-milliseconds#time | PERSIST)]",
    handler: getex,
    ..Command::DEFAULT
},
    Command {
    name: "append",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "string",
    summary: "Append a value to a key",
    since: "2.0.0",
    complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
    args: "key#key value",
    handler: append,
    ..Command::DEFAULT
},
    Command {
    name: "strlen",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    group: "string",
    summary: "Get the length of the value stored in a key",
    since: "2.2.0",
    args: "key#key",
    handler: strlen,
    ..Command::DEFAULT
},
    Command {
    name: "incr",
    arity: 2,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Increment the integer value of a key by one",
    since: "1.0.0",
    args: "key#key",
    handler: incr,
    ..Command::DEFAULT
},
    Command {
    name: "decr",
    arity: 2,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Decrement the integer value of a key by one",
    since: "1.0.0",
    args: "key#key",
    handler: decr,
    ..Command::DEFAULT
},
    Command {
    name: "incrby",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Increment the integer value of a key by the given amount",
    since: "1.0.0",
    args: "key#key increment#int",
    handler: incrby,
    ..Command::DEFAULT
},
    Command {
    name: "decrby",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Decrement the integer value of a key by the given number",
    since: "1.0.0",
    args: "key#key decrement#int",
    handler: decrby,
    ..Command::DEFAULT
},
    Command {
    name: "incrbyfloat",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "string",
    summary: "Increment the float value of a key by the given amount",
    since: "2.6.0",
    args: "key#key increment#double",
    handler: incrbyfloat,
    ..Command::DEFAULT
},
    Command {
    name: "getrange",
    arity: 4,
    flags: flags::READONLY,
    keys: KEY1,
    group: "string",
    summary: "Get a substring of the string stored at a key",
    since: "2.4.0",
    complexity: GETRANGE_COMPLEXITY,
    args: "key#key start#int end#int",
    handler: getrange,
    ..Command::DEFAULT
},
    Command {
    name: "setrange",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "string",
    summary: "Overwrite part of a string at key starting at the specified offset",
    since: "2.2.0",
    complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
    args: "key#key offset#int value",
    handler: setrange,
    ..Command::DEFAULT
},
    Command {
    name: "substr",
    arity: 4,
    flags: flags::READONLY,
    keys: KEY1,
    group: "string",
    summary: "Get a substring of the string stored at a key",
    since: "1.0.0",
    complexity: GETRANGE_COMPLEXITY,
    args: "key#key start#int end#int",
    handler: getrange,
    ..Command::DEFAULT
},
    Command {
    name: "lcs",
    arity: -3,
    flags: flags::READONLY,
    keys: Keys::Range {
            first: 1,
            last: 2,
            step: 1,
        },
    group: "string",
    summary: "Find longest common substring",
    since: "7.0.0",
    complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
    args: "key1#key key2#key [LEN] [IDX] [MINMATCHLEN:len#int] [WITHMATCHLEN]",
    handler: lcs,
    ..Command::DEFAULT
},
];

// ---------------------------------------------------------------------------------------
// Shared helpers

/// The largest string a command may build (proto-max-bulk-len), in bytes. Cached per
/// thread and re-read when the configuration changes (GETBIT, SETBIT... are hot paths).
pub(crate) fn max_string_len(ctx: &Ctx<'_>) -> u64 {
    thread_local! {
        // (server address, config epoch, value)
        static CACHE: Cell<(usize, u64, u64)> = const { Cell::new((0, u64::MAX, 0)) };
    }
    let config = &ctx.config();
    let id = ctx.server() as *const _ as usize;
    let epoch = config.epoch();
    CACHE.with(|c| {
        let (cid, cepoch, v) = c.get();
        if cid == id && cepoch == epoch {
            return v;
        }
        let v = config.get().proto_max_bulk_len;
        c.set((id, epoch, v));
        v
    })
}

/// Redis's checkStringLength: `size + append` must stay within proto-max-bulk-len.
pub(crate) fn check_string_length(size: u64, append: u64, max: u64) -> CmdResult {
    match size.checked_add(append) {
        Some(total) if total <= max => Ok(()),
        _ => Err(CmdError::Static(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        )),
    }
}

/// An option argument as C's string functions see it: up to its first NUL byte.
fn opt_name(arg: &[u8]) -> &[u8] {
    match arg.iter().position(|&b| b == 0) {
        Some(n) => &arg[..n],
        None => arg,
    }
}

/// Case-insensitive option match, as Redis's strcasecmp on the argument.
pub(crate) fn is_opt(arg: &[u8], name: &[u8]) -> bool {
    opt_name(arg).eq_ignore_ascii_case(name)
}
