//! The set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE
//! SINTER SINTERCARD SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE SSCAN. Semantics follow
//! Redis 7.0's t_set.c, including which algorithm builds a result (it decides the result's
//! encoding, and an intset's ascending order is visible in replies); the value type
//! (intset / hashtable forms) is `strata_engine::SetValue`.
//!
//! Each write command changes the keyspace in one place (between its lock and its reply)
//! and then emits its keyspace events where Redis 7.0's t_set.c calls notifyKeyspaceEvent:
//! sadd (when a member is added), srem (then del when the set is emptied), spop (then del
//! when emptied; SPOP with a count emits one spop), SMOVE's srem on the source (del when
//! emptied) then sadd on the destination (when the member is new there), and the *STORE
//! commands' sinterstore / sunionstore / sdiffstore, or del when the result is empty and
//! the destination existed.
//!
//! Here: the declarations; the handlers are in `members` (SADD SREM SMOVE SISMEMBER
//! SMISMEMBER SCARD SSCAN), `random` (SPOP SRANDMEMBER) and `setops` (the intersections,
//! unions and differences, SMEMBERS among them).

use crate::exec::command::{flags, ks, Command, KeySpec, Keys};
use strata_engine::SetValue;

/// Writes a set element (`SetValue`'s iterator item) as a bulk string.
macro_rules! bulk_elem {
    ($ctx:expr, $e:expr) => {{
        let mut buf = [0u8; 20];
        $ctx.out.bulk($e.bytes(&mut buf));
    }};
}

// After the macro, so that the files below see it.
mod members;
mod random;
mod setops;

use members::{sadd, scard, sismember, smismember, smove, srem, sscan};
use random::{spop, srandmember};
use setops::{sdiff, sdiffstore, sinter, sintercard, sinterstore, smembers, sunion, sunionstore};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
const ALL_KEYS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};

pub const COMMANDS: &[Command] = &[
    Command {
    name: "sadd",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "set",
    summary: "Add one or more members to a set",
    since: "1.0.0",
    complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    args: "key#key member...",
    handler: sadd,
    ..Command::DEFAULT
},
    Command {
    name: "srem",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    group: "set",
    summary: "Remove one or more members from a set",
    since: "1.0.0",
    complexity: "O(N) where N is the number of members to be removed.",
    args: "key#key member...",
    handler: srem,
    ..Command::DEFAULT
},
    Command {
    name: "smembers",
    arity: 2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "set",
    summary: "Get all the members in a set",
    since: "1.0.0",
    complexity: "O(N) where N is the set cardinality.",
    tips: &["nondeterministic_output_order"],
    args: "key#key",
    handler: smembers,
    ..Command::DEFAULT
},
    Command {
    name: "sismember",
    arity: 3,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    group: "set",
    summary: "Determine if a given value is a member of a set",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key member",
    handler: sismember,
    ..Command::DEFAULT
},
    Command {
    name: "smismember",
    arity: -3,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "set",
    summary: "Returns the membership associated with the given elements for a set",
    since: "6.2.0",
    complexity: "O(N) where N is the number of elements being checked for membership",
    args: "key#key member...",
    handler: smismember,
    ..Command::DEFAULT
},
    Command {
    name: "scard",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    group: "set",
    summary: "Get the number of members in a set",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key",
    handler: scard,
    ..Command::DEFAULT
},
    Command {
    name: "spop",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
    ]),
    group: "set",
    summary: "Remove and return one or multiple random members from a set",
    since: "1.0.0",
    complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
    tips: &["nondeterministic_output"],
    args: "key#key [count#int]",
    handler: spop,
    ..Command::DEFAULT
},
    Command {
    name: "srandmember",
    arity: -2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "set",
    summary: "Get one or multiple random members from a set",
    since: "1.0.0",
    complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
    tips: &["nondeterministic_output"],
    args: "key#key [count#int]",
    handler: srandmember,
    ..Command::DEFAULT
},
    Command {
    name: "smove",
    arity: 4,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
        KeySpec::range(ks::RW | ks::INSERT, 2, 0, 1),
    ]),
    group: "set",
    summary: "Move a member from one set to another",
    since: "1.0.0",
    complexity: "O(1)",
    args: "source#key destination#key1 member",
    handler: smove,
    ..Command::DEFAULT
},
    Command {
    name: "sinter",
    arity: -2,
    flags: flags::READONLY,
    keys: ALL_KEYS,
    group: "set",
    summary: "Intersect multiple sets",
    since: "1.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    tips: &["nondeterministic_output_order"],
    args: "key#key...",
    handler: sinter,
    ..Command::DEFAULT
},
    Command {
    name: "sintercard",
    arity: -3,
    flags: flags::READONLY | flags::MOVABLEKEYS,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RO | ks::ACCESS, 1),
    ]),
    group: "set",
    summary: "Intersect multiple sets and return the cardinality of the result",
    since: "7.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    args: "numkeys#int key#key... [LIMIT:limit#int]",
    handler: sintercard,
    ..Command::DEFAULT
},
    Command {
    name: "sunion",
    arity: -2,
    flags: flags::READONLY,
    keys: ALL_KEYS,
    group: "set",
    summary: "Add multiple sets",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    tips: &["nondeterministic_output_order"],
    args: "key#key...",
    handler: sunion,
    ..Command::DEFAULT
},
    Command {
    name: "sdiff",
    arity: -2,
    flags: flags::READONLY,
    keys: ALL_KEYS,
    group: "set",
    summary: "Subtract multiple sets",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    tips: &["nondeterministic_output_order"],
    args: "key#key...",
    handler: sdiff,
    ..Command::DEFAULT
},
    Command {
    name: "sinterstore",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::UPDATE, 1, 0, 1),
        KeySpec::range(ks::RO | ks::ACCESS, 2, -1, 1),
    ]),
    group: "set",
    summary: "Intersect multiple sets and store the resulting set in a key",
    since: "1.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    args: "destination#key key#key1...",
    handler: sinterstore,
    ..Command::DEFAULT
},
    Command {
    name: "sunionstore",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
        KeySpec::range(ks::RO | ks::ACCESS, 2, -1, 1),
    ]),
    group: "set",
    summary: "Add multiple sets and store the resulting set in a key",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    args: "destination#key key#key1...",
    handler: sunionstore,
    ..Command::DEFAULT
},
    Command {
    name: "sdiffstore",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
        KeySpec::range(ks::RO | ks::ACCESS, 2, -1, 1),
    ]),
    group: "set",
    summary: "Subtract multiple sets and store the resulting set in a key",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    args: "destination#key key#key1...",
    handler: sdiffstore,
    ..Command::DEFAULT
},
    Command {
    name: "sscan",
    arity: -3,
    flags: flags::READONLY,
    keys: KEY1,
    group: "set",
    summary: "Incrementally iterate Set elements",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
    tips: &["nondeterministic_output"],
    args: "key#key cursor#int [MATCH:pattern#pattern] [COUNT:count#int]",
    handler: sscan,
    ..Command::DEFAULT
},
];

/// The union of `sets`, built as Redis builds it: into a new intset that converts as
/// members arrive.
fn union_of<'s>(
    sets: impl Iterator<Item = &'s SetValue>,
    enc: &strata_engine::Encodings,
) -> SetValue {
    let mut out = SetValue::default();
    for s in sets {
        for e in s.iter() {
            let mut buf = [0u8; 20];
            out.add(e.bytes(&mut buf), enc);
        }
    }
    out
}
