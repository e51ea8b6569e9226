//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM
//! LTRIM LPOS LMOVE RPOPLPUSH LMPOP. Semantics, argument checks and their order, and reply
//! shapes follow Redis 7.0's t_list.c. Here: the declarations and the helpers the family
//! shares; the handlers are in `push`, `pop`, `lmove`, `read` (LLEN LRANGE LINDEX LPOS) and
//! `edit` (LSET LINSERT LREM LTRIM).
//!
//! Lookups mirror Redis's: the read commands (LLEN LRANGE LINDEX LPOS) use `Locked::list`
//! (lookupKeyRead: counts a hit or miss), the writes `list_mut` (lookupKeyWrite). A list
//! that becomes empty is deleted at once.
//!
//! The blocking variants (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP) reuse the effects of
//! `push`, `pop` and `lmove`: [`push_elements`], [`pop_count_reply`], [`move_element`],
//! [`parse_mpop`] and [`mpop_reply`], and their events ([`notify_popped`],
//! [`notify_pushed`], [`notify_moved`]). Keyspace events are emitted where Redis 7.0's
//! t_list.c emits them, after the write with the lock released; every push also signals
//! the key as ready for blocked clients.

mod edit;
mod lmove;
mod pop;
mod push;
mod read;

use crate::exec::command::{flags, ks, parse_i64, CmdError, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use strata_engine::ListValue;
use strata_resp::Reply;

pub use lmove::{move_element, notify_moved};
pub use pop::{mpop_reply, notify_popped, parse_mpop, pop_count_reply, propagate_pop};
pub use push::{notify_pushed, push_elements};

use edit::{linsert, lrem, lset, ltrim};
use lmove::{lmove, rpoplpush};
use pop::{lmpop, lpop, rpop};
use push::{lpush, lpushx, rpush, rpushx};
use read::{lindex, llen, lpos, lrange};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
const PUSH_COMPLEXITY: &str = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.";

pub const COMMANDS: &[Command] = &[
    Command {
    name: "lpush",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "list",
    summary: "Prepend one or multiple elements to a list",
    since: "1.0.0",
    complexity: PUSH_COMPLEXITY,
    args: "key#key element...",
    handler: lpush,
    ..Command::DEFAULT
},
    Command {
    name: "rpush",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "list",
    summary: "Append one or multiple elements to a list",
    since: "1.0.0",
    complexity: PUSH_COMPLEXITY,
    args: "key#key element...",
    handler: rpush,
    ..Command::DEFAULT
},
    Command {
    name: "lpushx",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "list",
    summary: "Prepend an element to a list, only if the list exists",
    since: "2.2.0",
    complexity: PUSH_COMPLEXITY,
    args: "key#key element...",
    handler: lpushx,
    ..Command::DEFAULT
},
    Command {
    name: "rpushx",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "list",
    summary: "Append an element to a list, only if the list exists",
    since: "2.2.0",
    complexity: PUSH_COMPLEXITY,
    args: "key#key element...",
    handler: rpushx,
    ..Command::DEFAULT
},
    Command {
    name: "lpop",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
    ]),
    group: "list",
    summary: "Remove and get the first elements in a list",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements returned",
    args: "key#key [count#int]",
    handler: lpop,
    ..Command::DEFAULT
},
    Command {
    name: "rpop",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
    ]),
    group: "list",
    summary: "Remove and get the last elements in a list",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements returned",
    args: "key#key [count#int]",
    handler: rpop,
    ..Command::DEFAULT
},
    Command {
    name: "llen",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    group: "list",
    summary: "Get the length of a list",
    since: "1.0.0",
    complexity: "O(1)",
    args: "key#key",
    handler: llen,
    ..Command::DEFAULT
},
    Command {
    name: "lrange",
    arity: 4,
    flags: flags::READONLY,
    keys: KEY1,
    group: "list",
    summary: "Get a range of elements from a list",
    since: "1.0.0",
    complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
    args: "key#key start#int stop#int",
    handler: lrange,
    ..Command::DEFAULT
},
    Command {
    name: "lindex",
    arity: 3,
    flags: flags::READONLY,
    keys: KEY1,
    group: "list",
    summary: "Get an element from a list by its index",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
    args: "key#key index#int",
    handler: lindex,
    ..Command::DEFAULT
},
    Command {
    name: "lset",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "list",
    summary: "Set the value of an element in a list by its index",
    since: "1.0.0",
    complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
    args: "key#key index#int element",
    handler: lset,
    ..Command::DEFAULT
},
    Command {
    name: "linsert",
    arity: 5,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "list",
    summary: "Insert an element before or after another element in a list",
    since: "2.2.0",
    complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
    args: "key#key where=(BEFORE | AFTER) pivot element",
    handler: linsert,
    ..Command::DEFAULT
},
    Command {
    name: "lrem",
    arity: 4,
    flags: flags::WRITE,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    group: "list",
    summary: "Remove elements from a list",
    since: "1.0.0",
    complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
    args: "key#key count#int element",
    handler: lrem,
    ..Command::DEFAULT
},
    Command {
    name: "ltrim",
    arity: 4,
    flags: flags::WRITE,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    group: "list",
    summary: "Trim a list to the specified range",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements to be removed by the operation.",
    args: "key#key start#int stop#int",
    handler: ltrim,
    ..Command::DEFAULT
},
    Command {
    name: "lpos",
    arity: -3,
    flags: flags::READONLY,
    keys: KEY1,
    group: "list",
    summary: "Return the index of matching elements on a list",
    since: "6.0.6",
    complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
    args: "key#key element [RANK:rank#int] [COUNT:num-matches#int] [MAXLEN:len#int]",
    handler: lpos,
    ..Command::DEFAULT
},
    Command {
    name: "lmove",
    arity: 5,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
        KeySpec::range(ks::RW | ks::INSERT, 2, 0, 1),
    ]),
    group: "list",
    summary: "Pop an element from a list, push it to another list and return it",
    since: "6.2.0",
    complexity: "O(1)",
    args: "source#key destination#key1 wherefrom=(LEFT | RIGHT) whereto=(LEFT | RIGHT)",
    handler: lmove,
    ..Command::DEFAULT
},
    Command {
    name: "rpoplpush",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
        KeySpec::range(ks::RW | ks::INSERT, 2, 0, 1),
    ]),
    group: "list",
    summary: "Remove the last element in a list, prepend it to another list and return it",
    since: "1.2.0",
    complexity: "O(1)",
    args: "source#key destination#key1",
    handler: rpoplpush,
    ..Command::DEFAULT
},
    Command {
    name: "lmpop",
    arity: -4,
    flags: flags::WRITE | flags::MOVABLEKEYS,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RW | ks::ACCESS | ks::DELETE, 1),
    ]),
    group: "list",
    summary: "Pop elements from a list",
    since: "7.0.0",
    complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
    args: "numkeys#int key#key... where=(LEFT | RIGHT) [COUNT:count#int]",
    handler: lmpop,
    ..Command::DEFAULT
},
];

/// A list end, as LEFT and RIGHT name it (LEFT is the head).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    Left,
    Right,
}

impl Where {
    pub fn head(self) -> bool {
        self == Where::Left
    }

    /// LEFT or RIGHT, case-insensitively; anything else is a syntax error.
    pub fn parse(arg: &[u8]) -> Result<Where, CmdError> {
        if arg.eq_ignore_ascii_case(b"left") {
            Ok(Where::Left)
        } else if arg.eq_ignore_ascii_case(b"right") {
            Ok(Where::Right)
        } else {
            Err(CmdError::SYNTAX)
        }
    }
}

/// The node size setting a new list takes (list-max-listpack-size).
fn fill(ctx: &Ctx<'_>) -> i64 {
    ctx.keyspace().encodings.list_size()
}

/// Redis's getPositiveLongFromObjectOrReply with a message: the same error for a
/// non-integer and a negative value.
fn non_negative(arg: &[u8], msg: &'static str) -> Result<i64, CmdError> {
    parse_i64(arg)
        .filter(|&n| n >= 0)
        .ok_or(CmdError::Static(msg))
}

/// Redis's start/end normalisation (LRANGE, LTRIM): negative indexes count from the end;
/// None when the range is empty, else the inclusive (start, end) within the list.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = i64::try_from(len).unwrap_or(i64::MAX);
    // llen >= 0, so adding it to a negative index cannot overflow.
    let mut start = if start < 0 { llen + start } else { start };
    let end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    let end = end.min(llen - 1);
    Some((start as usize, end as usize))
}

/// An index as LINDEX and LSET take it (negative counts from the tail), if in range.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let llen = i64::try_from(len).unwrap_or(i64::MAX);
    let i = if index < 0 { llen + index } else { index };
    (0..llen).contains(&i).then_some(i as usize)
}

/// Replies elements `start..stop` of `list` as an array, tail first when `rev`.
fn reply_range(out: &mut Reply<'_>, list: &ListValue, start: usize, stop: usize, rev: bool) {
    let it = list.range(start, stop);
    out.array(it.len());
    let mut buf = [0u8; 20];
    if rev {
        for e in it.rev() {
            out.bulk(e.bytes(&mut buf));
        }
    } else {
        for e in it {
            out.bulk(e.bytes(&mut buf));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key positions the declaration finds in `argv` (by the command named first).
    fn keys_of(argv: &[bytes::Bytes]) -> Vec<usize> {
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        let cmd = COMMANDS.iter().find(|c| c.name == name).expect("declared");
        cmd.key_positions(argv)
    }

    #[test]
    fn ranges_clamp_like_redis() {
        assert_eq!(clamp_range(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp_range(-100, 100, 3), Some((0, 2)));
        assert_eq!(clamp_range(2, 1, 3), None);
        assert_eq!(clamp_range(3, 5, 3), None);
        assert_eq!(clamp_range(0, -1, 0), None);
        assert_eq!(clamp_range(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(clamp_range(i64::MAX, i64::MIN, 3), None);
        assert_eq!(resolve_index(-1, 3), Some(2));
        assert_eq!(resolve_index(-4, 3), None);
        assert_eq!(resolve_index(i64::MIN, 3), None);
        assert_eq!(resolve_index(i64::MAX, 3), None);
    }

    #[test]
    fn lmpop_key_positions() {
        let argv = |s: &[&str]| {
            s.iter()
                .map(|a| bytes::Bytes::from(a.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys_of(&argv(&["lmpop", "2", "a", "b", "left"])),
            vec![2, 3]
        );
        assert_eq!(keys_of(&argv(&["lmpop", "2", "a", "b"])), vec![2, 3]);
        assert!(keys_of(&argv(&["lmpop", "3", "a", "b"])).is_empty());
        assert!(keys_of(&argv(&["lmpop", "0", "a", "left"])).is_empty());
        assert!(keys_of(&argv(&["lmpop", "-1", "a", "left"])).is_empty());
        assert!(keys_of(&argv(&["lmpop", "9223372036854775807", "a"])).is_empty());
    }
}
