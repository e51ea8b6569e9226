//! Sorted-set commands: the declarations of the family and the helpers its files share.
//! The handlers live by kind: `write` (ZADD ZINCRBY ZREM), `read` (ZSCORE ZMSCORE ZCARD
//! ZRANK ZREVRANK ZRANDMEMBER ZSCAN), `pop` (ZPOPMIN ZPOPMAX ZMPOP), `setops` (ZUNION
//! ZINTER ZDIFF, their STORE forms, ZINTERCARD), `range` (the ZRANGE family, ZCOUNT,
//! ZLEXCOUNT, ZREMRANGEBY*) over the range parsing of `spec`. Semantics, reply shapes and
//! error texts follow Redis 7.0's t_zset.c; the type itself is `strata_engine::ZSetValue`.
//!
//! The blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP) reuse [`zpop_reply`] and
//! [`notify_popped`]. Keyspace events are emitted where Redis 7.0's t_zset.c emits them,
//! after the write with the lock released; writes that add members signal the key as
//! ready for blocked clients.

mod pop;
mod range;
mod read;
mod setops;
mod spec;
mod write;

use crate::exec::command::{flags, ks, parse_i64, CmdError, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use strata_engine::{Value, ZSetValue};
use strata_resp::{Protocol, Reply};

pub use pop::{notify_popped, parse_zmpop, propagate_pop, zpop_reply};
use pop::{zmpop, zpopmax, zpopmin};
use read::{zcard, zmscore, zrandmember, zrank, zrevrank, zscan, zscore};
use setops::{zdiff, zdiffstore, zinter, zintercard, zinterstore, zunion, zunionstore};
pub(crate) use spec::parse_score;
pub(crate) use write::zadd_pairs;
use write::{zadd, zincrby, zrem};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "sorted-set",
    ..Command::DEFAULT
};

const W: u32 = flags::WRITE;
const R: u32 = flags::READONLY;
const F: u32 = flags::FAST;
const D: u32 = flags::DENYOOM;
const M: u32 = flags::MOVABLEKEYS;

const RANGE_CPLX: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).";
const REM_CPLX: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.";

pub const COMMANDS: &[Command] = &[
    Command {
    name: "zadd",
    arity: -4,
    flags: W | D | F,
    keys: KEY1,
    summary: "Add one or more members to a sorted set, or update its score if it already exists",
    since: "1.2.0",
    complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    args: "key#key [condition=(NX | XX)] [comparison=(GT | LT)] [change=CH] [increment=INCR] score_member=(score#double member)...",
    handler: zadd,
    ..FAMILY
},
    Command {
    name: "zincrby",
    arity: 4,
    flags: W | D | F,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    summary: "Increment the score of a member in a sorted set",
    since: "1.2.0",
    complexity: "O(log(N)) where N is the number of elements in the sorted set.",
    args: "key#key increment#int member",
    handler: zincrby,
    ..FAMILY
},
    Command {
    name: "zrem",
    arity: -3,
    flags: W | F,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    summary: "Remove one or more members from a sorted set",
    since: "1.2.0",
    complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
    args: "key#key member...",
    handler: zrem,
    ..FAMILY
},
    Command {
    name: "zscore",
    arity: 3,
    flags: R | F,
    keys: KEY1,
    summary: "Get the score associated with the given member in a sorted set",
    since: "1.2.0",
    complexity: "O(1)",
    args: "key#key member",
    handler: zscore,
    ..FAMILY
},
    Command {
    name: "zmscore",
    arity: -3,
    flags: R | F,
    keys: KEY1,
    summary: "Get the score associated with the given members in a sorted set",
    since: "6.2.0",
    complexity: "O(N) where N is the number of members being requested.",
    args: "key#key member...",
    handler: zmscore,
    ..FAMILY
},
    Command {
    name: "zcard",
    arity: 2,
    flags: R | F,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    summary: "Get the number of members in a sorted set",
    since: "1.2.0",
    complexity: "O(1)",
    args: "key#key",
    handler: zcard,
    ..FAMILY
},
    Command {
    name: "zcount",
    arity: 4,
    flags: R | F,
    keys: KEY1,
    summary: "Count the members in a sorted set with scores within the given values",
    since: "2.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    args: "key#key min#double max#double",
    handler: range::zcount,
    ..FAMILY
},
    Command {
    name: "zlexcount",
    arity: 4,
    flags: R | F,
    keys: KEY1,
    summary: "Count the number of members in a sorted set between a given lexicographical range",
    since: "2.8.9",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    args: "key#key min max",
    handler: range::zlexcount,
    ..FAMILY
},
    Command {
    name: "zrange",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set",
    since: "1.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    args: "key#key start stop [sortby=(BYSCORE | BYLEX)] [REV] [LIMIT:offset_count=(offset#int count#int)] [WITHSCORES]",
    handler: range::zrange,
    ..FAMILY
},
    Command {
    name: "zrangestore",
    arity: -5,
    flags: W | D,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
        KeySpec::range(ks::RO | ks::ACCESS, 2, 0, 1),
    ]),
    summary: "Store a range of members from sorted set into another key",
    since: "6.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
    args: "dst#key src#key1 min max [sortby=(BYSCORE | BYLEX)] [REV] [LIMIT:offset_count=(offset#int count#int)]",
    handler: range::zrangestore,
    ..FAMILY
},
    Command {
    name: "zrangebyscore",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by score",
    since: "1.0.5",
    complexity: RANGE_CPLX,
    args: "key#key min#double max#double [WITHSCORES] [LIMIT:offset_count=(offset#int count#int)]",
    handler: range::zrangebyscore,
    ..FAMILY
},
    Command {
    name: "zrevrangebyscore",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by score, with scores ordered from high to low",
    since: "2.2.0",
    complexity: RANGE_CPLX,
    args: "key#key max#double min#double [WITHSCORES] [LIMIT:offset_count=(offset#int count#int)]",
    handler: range::zrevrangebyscore,
    ..FAMILY
},
    Command {
    name: "zrangebylex",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by lexicographical range",
    since: "2.8.9",
    complexity: RANGE_CPLX,
    args: "key#key min max [LIMIT:offset_count=(offset#int count#int)]",
    handler: range::zrangebylex,
    ..FAMILY
},
    Command {
    name: "zrevrangebylex",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.",
    since: "2.8.9",
    complexity: RANGE_CPLX,
    args: "key#key max min [LIMIT:offset_count=(offset#int count#int)]",
    handler: range::zrevrangebylex,
    ..FAMILY
},
    Command {
    name: "zrevrange",
    arity: -4,
    flags: R,
    keys: KEY1,
    summary: "Return a range of members in a sorted set, by index, with scores ordered from high to low",
    since: "1.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    args: "key#key start#int stop#int [WITHSCORES]",
    handler: range::zrevrange,
    ..FAMILY
},
    Command {
    name: "zrank",
    arity: 3,
    flags: R | F,
    keys: KEY1,
    summary: "Determine the index of a member in a sorted set",
    since: "2.0.0",
    complexity: "O(log(N))",
    args: "key#key member",
    handler: zrank,
    ..FAMILY
},
    Command {
    name: "zrevrank",
    arity: 3,
    flags: R | F,
    keys: KEY1,
    summary: "Determine the index of a member in a sorted set, with scores ordered from high to low",
    since: "2.0.0",
    complexity: "O(log(N))",
    args: "key#key member",
    handler: zrevrank,
    ..FAMILY
},
    Command {
    name: "zremrangebyrank",
    arity: 4,
    flags: W,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    summary: "Remove all members in a sorted set within the given indexes",
    since: "2.0.0",
    complexity: REM_CPLX,
    args: "key#key start#int stop#int",
    handler: range::zremrangebyrank,
    ..FAMILY
},
    Command {
    name: "zremrangebyscore",
    arity: 4,
    flags: W,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    summary: "Remove all members in a sorted set within the given scores",
    since: "1.2.0",
    complexity: REM_CPLX,
    args: "key#key min#double max#double",
    handler: range::zremrangebyscore,
    ..FAMILY
},
    Command {
    name: "zremrangebylex",
    arity: 4,
    flags: W,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    summary: "Remove all members in a sorted set between the given lexicographical range",
    since: "2.8.9",
    complexity: REM_CPLX,
    args: "key#key min max",
    handler: range::zremrangebylex,
    ..FAMILY
},
    Command {
    name: "zpopmin",
    arity: -2,
    flags: W | F,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
    ]),
    summary: "Remove and return members with the lowest scores in a sorted set",
    since: "5.0.0",
    complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    args: "key#key [count#int]",
    handler: zpopmin,
    ..FAMILY
},
    Command {
    name: "zpopmax",
    arity: -2,
    flags: W | F,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
    ]),
    summary: "Remove and return members with the highest scores in a sorted set",
    since: "5.0.0",
    complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    args: "key#key [count#int]",
    handler: zpopmax,
    ..FAMILY
},
    Command {
    name: "zrandmember",
    arity: -2,
    flags: R,
    keys: KEY1,
    summary: "Get one or multiple random elements from a sorted set",
    since: "6.2.0",
    complexity: "O(N) where N is the number of elements returned",
    tips: &["nondeterministic_output"],
    args: "key#key [options=(count#int [WITHSCORES])]",
    handler: zrandmember,
    ..FAMILY
},
    Command {
    name: "zunion",
    arity: -3,
    flags: R | M,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RO | ks::ACCESS, 1),
    ]),
    summary: "Add multiple sorted sets",
    since: "6.2.0",
    complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    args: "numkeys#int key#key... [WEIGHTS:weight#int]... [AGGREGATE:aggregate=(SUM | MIN | MAX)] [WITHSCORES]",
    handler: zunion,
    ..FAMILY
},
    Command {
    name: "zinter",
    arity: -3,
    flags: R | M,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RO | ks::ACCESS, 1),
    ]),
    summary: "Intersect multiple sorted sets",
    since: "6.2.0",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    args: "numkeys#int key#key... [WEIGHTS:weight#int]... [AGGREGATE:aggregate=(SUM | MIN | MAX)] [WITHSCORES]",
    handler: zinter,
    ..FAMILY
},
    Command {
    name: "zdiff",
    arity: -3,
    flags: R | M,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RO | ks::ACCESS, 1),
    ]),
    summary: "Subtract multiple sorted sets",
    since: "6.2.0",
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    args: "numkeys#int key#key... [WITHSCORES]",
    handler: zdiff,
    ..FAMILY
},
    Command {
    name: "zunionstore",
    arity: -4,
    flags: W | D | M,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
        KeySpec::keynum(ks::RO | ks::ACCESS, 2),
    ]),
    summary: "Add multiple sorted sets and store the resulting sorted set in a new key",
    since: "2.0.0",
    complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    args: "destination#key numkeys#int key#key1... [WEIGHTS:weight#int]... [AGGREGATE:aggregate=(SUM | MIN | MAX)]",
    handler: zunionstore,
    ..FAMILY
},
    Command {
    name: "zinterstore",
    arity: -4,
    flags: W | D | M,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
        KeySpec::keynum(ks::RO | ks::ACCESS, 2),
    ]),
    summary: "Intersect multiple sorted sets and store the resulting sorted set in a new key",
    since: "2.0.0",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    args: "destination#key numkeys#int key#key1... [WEIGHTS:weight#int]... [AGGREGATE:aggregate=(SUM | MIN | MAX)]",
    handler: zinterstore,
    ..FAMILY
},
    Command {
    name: "zdiffstore",
    arity: -4,
    flags: W | D | M,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 1, 0, 1),
        KeySpec::keynum(ks::RO | ks::ACCESS, 2),
    ]),
    summary: "Subtract multiple sorted sets and store the resulting sorted set in a new key",
    since: "6.2.0",
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    args: "destination#key numkeys#int key#key1...",
    handler: zdiffstore,
    ..FAMILY
},
    Command {
    name: "zintercard",
    arity: -3,
    flags: R | M,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RO | ks::ACCESS, 1),
    ]),
    summary: "Intersect multiple sorted sets and return the cardinality of the result",
    since: "7.0.0",
    complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
    args: "numkeys#int key#key... [LIMIT:limit#int]",
    handler: zintercard,
    ..FAMILY
},
    Command {
    name: "zmpop",
    arity: -4,
    flags: W | M,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RW | ks::ACCESS | ks::DELETE, 1),
    ]),
    summary: "Remove and return members with scores in a sorted set",
    since: "7.0.0",
    complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    args: "numkeys#int key#key... where=(MIN | MAX) [COUNT:count#int]",
    handler: zmpop,
    ..FAMILY
},
    Command {
    name: "zscan",
    arity: -3,
    flags: R,
    keys: KEY1,
    summary: "Incrementally iterate sorted sets elements and associated scores",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
    tips: &["nondeterministic_output"],
    args: "key#key cursor#int [MATCH:pattern#pattern] [COUNT:count#int]",
    handler: zscan,
    ..FAMILY
},
];

// ---------------------------------------------------------------------------------------
// Shared helpers

/// The sorted set in `v`, or WRONGTYPE.
fn zset_of(v: Option<&Value>) -> Result<&ZSetValue, CmdError> {
    match v {
        Some(Value::ZSet(z)) => Ok(z),
        _ => Err(CmdError::WRONG_TYPE),
    }
}

fn resp3(out: &Reply<'_>) -> bool {
    out.proto == Protocol::Resp3
}

/// Members, with scores if asked: RESP2 a flat array, RESP3 an array of [member, score].
fn reply_pairs(out: &mut Reply<'_>, items: &[(&[u8], f64)], withscores: bool) {
    if withscores && !resp3(out) {
        out.array(items.len() * 2);
    } else {
        out.array(items.len());
    }
    for (m, s) in items {
        if withscores && resp3(out) {
            out.array(2);
        }
        out.bulk(m);
        if withscores {
            out.double(*s);
        }
    }
}

/// Redis's getPositiveLongFromObjectOrReply, or getRangeLongFromObjectOrReply(min,
/// LONG_MAX) with a message: the same error for text that is no integer and for one < min.
fn positive_arg(
    ctx: &Ctx<'_>,
    i: usize,
    min: i64,
    msg: Option<&'static str>,
) -> Result<i64, CmdError> {
    let fail = || match msg {
        Some(m) => CmdError::Custom(format!("ERR {m}")),
        None => CmdError::Static("ERR value is out of range, must be positive"),
    };
    match parse_i64(ctx.arg(i)) {
        Some(n) if n >= min => Ok(n),
        _ => Err(fail()),
    }
}
