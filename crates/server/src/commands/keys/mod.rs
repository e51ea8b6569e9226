//! The generic keyspace commands: DEL UNLINK EXISTS TYPE RENAME RENAMENX COPY MOVE KEYS SCAN
//! RANDOMKEY TOUCH OBJECT, and expiry: EXPIRE PEXPIRE EXPIREAT PEXPIREAT EXPIRETIME
//! PEXPIRETIME TTL PTTL PERSIST. Semantics follow Redis 7.0's db.c, expire.c and object.c.
//! Here: the declarations; the handlers are in `presence` (DEL UNLINK EXISTS TYPE TOUCH),
//! `rename` (RENAME RENAMENX COPY MOVE), `walk` (KEYS SCAN RANDOMKEY), `object` and `expire`.
//!
//! Lookups mirror Redis's lookup flavours:
//! - `lookupKeyRead` (counts a keyspace hit/miss and touches the access time): `Locked::get`
//!   through `ctx.lock` (TOUCH, COPY's source);
//! - `lookupKeyReadWithFlags(LOOKUP_NOTOUCH)` (counts, does not touch): `Locked::get` through
//!   a guard with `no_touch(true)` (EXISTS, TYPE, TTL, OBJECT);
//! - `lookupKeyWrite` (no statistics): `contains` / `peek` / `take` / `remove`.

mod expire;
mod object;
mod presence;
mod rename;
mod walk;

use crate::exec::command::{flags, ks, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use strata_engine::Locked;

use expire::{expire, expireat, expiretime, persist, pexpire, pexpireat, pexpiretime, pttl, ttl};
pub(crate) use object::refcount;
use object::{object_encoding, object_freq, object_help, object_idletime, object_refcount};
use presence::{del, exists, touch, type_, unlink};
use rename::{copy, move_, rename, renamenx};
use walk::{keys, randomkey, scan};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
pub const COMMANDS: &[Command] = &[
    Command {
    name: "del",
    arity: -2,
    flags: flags::WRITE,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RM | ks::DELETE, 1, -1, 1),
    ]),
    summary: "Delete a key",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
    tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
    args: "key#key...",
    handler: del,
    ..Command::DEFAULT
},
    Command {
    name: "unlink",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RM | ks::DELETE, 1, -1, 1),
    ]),
    summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
    since: "4.0.0",
    complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
    tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
    args: "key#key...",
    handler: unlink,
    ..Command::DEFAULT
},
    Command {
    name: "exists",
    arity: -2,
    flags: flags::READONLY | flags::FAST | flags::PRESENCE,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, -1, 1),
    ]),
    summary: "Determine if a key exists",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys to check.",
    tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
    args: "key#key...",
    handler: exists,
    ..Command::DEFAULT
},
    Command {
    name: "type",
    arity: 2,
    flags: flags::READONLY | flags::FAST | flags::PRESENCE,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    summary: "Determine the type stored at key",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key",
    handler: type_,
    ..Command::DEFAULT
},
    Command {
    name: "rename",
    arity: 3,
    flags: flags::WRITE,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
        KeySpec::range(ks::OW | ks::UPDATE, 2, 0, 1),
    ]),
    summary: "Rename a key",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key newkey#key1",
    handler: rename,
    ..Command::DEFAULT
},
    Command {
    name: "renamenx",
    arity: 3,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
        KeySpec::range(ks::OW | ks::INSERT, 2, 0, 1),
    ]),
    summary: "Rename a key, only if the new key does not exist",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key newkey#key1",
    handler: renamenx,
    ..Command::DEFAULT
},
    Command {
    name: "copy",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::ALL_SHARDS,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO | ks::ACCESS, 1, 0, 1),
        KeySpec::range(ks::OW | ks::UPDATE, 2, 0, 1),
    ]),
    summary: "Copy a key",
    since: "6.2.0",
    complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
    args: "source#key destination#key1 [DB:destination-db#int] [REPLACE]",
    handler: copy,
    ..Command::DEFAULT
},
    Command {
    name: "move",
    arity: 3,
    flags: flags::WRITE | flags::FAST | flags::ALL_SHARDS,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    summary: "Move a key to another database",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key db#int",
    handler: move_,
    ..Command::DEFAULT
},
    Command {
    name: "keys",
    arity: 2,
    flags: flags::READONLY | flags::DB_SHARDS,
    summary: "Find all keys matching the given pattern",
    since: "1.0.0",
    complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
    tips: &["request_policy:all_shards", "nondeterministic_output_order"],
    acl: &["@keyspace", "@dangerous"],
    args: "pattern#pattern",
    handler: keys,
    ..Command::DEFAULT
},
    Command {
    name: "scan",
    arity: -2,
    flags: flags::READONLY | flags::DB_SHARDS,
    summary: "Incrementally iterate the keys space",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
    tips: &["nondeterministic_output", "request_policy:special"],
    args: "cursor#int [MATCH:pattern#pattern] [COUNT:count#int] [TYPE:type]",
    handler: scan,
    ..Command::DEFAULT
},
    Command {
    name: "randomkey",
    arity: 1,
    flags: flags::READONLY | flags::DB_SHARDS,
    summary: "Return a random key from the keyspace",
    since: "1.0.0",
    complexity: "O(1)",
    tips: &["request_policy:all_shards", "nondeterministic_output"],
    handler: randomkey,
    ..Command::DEFAULT
},
    Command {
    name: "touch",
    arity: -2,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, -1, 1),
    ]),
    summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.",
    since: "3.2.1",
    complexity: "O(N) where N is the number of keys that will be touched.",
    tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
    args: "key#key...",
    handler: touch,
    ..Command::DEFAULT
},
    Command {
    name: "object",
    arity: -2,
    flags: 0,
    summary: "A container for object introspection commands",
    since: "2.2.3",
    complexity: "Depends on subcommand.",
    handler: super::container,
    subcommands: OBJECT_SUBCOMMANDS,
    ..Command::DEFAULT
},
    Command {
    name: "expire",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set a key's time to live in seconds",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key seconds#int [condition=(NX | XX | GT | LT)]",
    handler: expire,
    ..Command::DEFAULT
},
    Command {
    name: "pexpire",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set a key's time to live in milliseconds",
    since: "2.6.0",
    complexity: "O(1)",
    args: "key#key milliseconds#int [condition=(NX | XX | GT | LT)]",
    handler: pexpire,
    ..Command::DEFAULT
},
    Command {
    name: "expireat",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set the expiration for a key as a UNIX timestamp",
    since: "1.2.0",
    complexity: "O(1)",
    args: "key#key unix-time-seconds#time [condition=(NX | XX | GT | LT)]",
    handler: expireat,
    ..Command::DEFAULT
},
    Command {
    name: "pexpireat",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
    since: "2.6.0",
    complexity: "O(1)",
    args: "key#key unix-time-milliseconds#time [condition=(NX | XX | GT | LT)]",
    handler: pexpireat,
    ..Command::DEFAULT
},
    Command {
    name: "expiretime",
    arity: 2,
    flags: flags::READONLY | flags::FAST | flags::PRESENCE,
    keys: KEY1,
    summary: "Get the expiration Unix timestamp for a key",
    since: "7.0.0",
    complexity: "O(1)",
    args: "key#key",
    handler: expiretime,
    ..Command::DEFAULT
},
    Command {
    name: "pexpiretime",
    arity: 2,
    flags: flags::READONLY | flags::FAST | flags::PRESENCE,
    keys: KEY1,
    summary: "Get the expiration Unix timestamp for a key in milliseconds",
    since: "7.0.0",
    complexity: "O(1)",
    args: "key#key",
    handler: pexpiretime,
    ..Command::DEFAULT
},
    Command {
    name: "ttl",
    arity: 2,
    flags: flags::READONLY | flags::FAST | flags::PRESENCE,
    keys: KEY1,
    summary: "Get the time to live for a key in seconds",
    since: "1.0.0",
    complexity: "O(1)",
    tips: &["nondeterministic_output"],
    args: "key#key",
    handler: ttl,
    ..Command::DEFAULT
},
    Command {
    name: "pttl",
    arity: 2,
    flags: flags::READONLY | flags::FAST | flags::PRESENCE,
    keys: KEY1,
    summary: "Get the time to live for a key in milliseconds",
    since: "2.6.0",
    complexity: "O(1)",
    tips: &["nondeterministic_output"],
    args: "key#key",
    handler: pttl,
    ..Command::DEFAULT
},
    Command {
    name: "persist",
    arity: 2,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    summary: "Remove the expiration from a key",
    since: "2.2.0",
    complexity: "O(1)",
    args: "key#key",
    handler: persist,
    ..Command::DEFAULT
},
];

const OBJECT_SUBCOMMANDS: &[Command] = &[
    Command {
        name: "encoding",
        arity: 3,
        flags: flags::READONLY,
        keys: Keys::Specs(&[KeySpec::range(ks::RO, 2, 0, 1)]),
        summary: "Inspect the internal encoding of a Redis object",
        since: "2.2.3",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        args: "key#key",
        handler: object_encoding,
        ..Command::DEFAULT
    },
    Command {
        name: "freq",
        arity: 3,
        flags: flags::READONLY,
        keys: Keys::Specs(&[KeySpec::range(ks::RO, 2, 0, 1)]),
        summary: "Get the logarithmic access frequency counter of a Redis object",
        since: "4.0.0",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        args: "key#key",
        handler: object_freq,
        ..Command::DEFAULT
    },
    Command {
        name: "help",
        arity: 2,
        flags: flags::LOADING | flags::STALE,
        summary: "Show helpful text about the different subcommands",
        since: "6.2.0",
        complexity: "O(1)",
        handler: object_help,
        ..Command::DEFAULT
    },
    Command {
        name: "idletime",
        arity: 3,
        flags: flags::READONLY,
        keys: Keys::Specs(&[KeySpec::range(ks::RO, 2, 0, 1)]),
        summary: "Get the time since a Redis object was last accessed",
        since: "2.2.3",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        args: "key#key",
        handler: object_idletime,
        ..Command::DEFAULT
    },
    Command {
        name: "refcount",
        arity: 3,
        flags: flags::READONLY,
        keys: Keys::Specs(&[KeySpec::range(ks::RO, 2, 0, 1)]),
        summary: "Get the number of references to the value of the key",
        since: "2.2.3",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        args: "key#key",
        handler: object_refcount,
        ..Command::DEFAULT
    },
];

/// A lock on `keys` whose reads count keyspace hits/misses but never update access times
/// (Redis's LOOKUP_NOTOUCH).
fn lock_notouch<'a, K: AsRef<[u8]>>(ctx: &Ctx<'a>, keys: &[K]) -> Locked<'a> {
    ctx.db().lock_at(ctx.now_ms, keys).no_touch(true)
}
