//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM
//! LTRIM LPOS LMOVE RPOPLPUSH LMPOP. Semantics, argument checks and their order, and reply
//! shapes follow Redis 7.0's t_list.c.
//!
//! Lookups mirror Redis's: the read commands (LLEN LRANGE LINDEX LPOS) use `Locked::list`
//! (lookupKeyRead: counts a hit or miss), the writes `list_mut` (lookupKeyWrite). A list
//! that becomes empty is deleted at once.
//!
//! The blocking variants (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP) reuse the effects below:
//! [`push_elements`], [`pop_count_reply`], [`move_element`], [`parse_mpop`] and
//! [`mpop_reply`], and their events ([`notify_popped`], [`notify_pushed`],
//! [`notify_moved`]). Keyspace events are emitted where Redis 7.0's t_list.c emits them,
//! after the write with the lock released; every push also signals the key as ready for
//! blocked clients.

use crate::exec::command::{flags, parse_i64, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use std::ops::Range;
use strata_engine::{ListValue, Locked, WrongType};
use strata_resp::Reply;

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
const KEYS_1_2: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};

const PUSH_COMPLEXITY: &str = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.";

pub const COMMANDS: &[Command] = &[
    Command {
    name: "lpush",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "list",
    summary: "Prepend one or multiple elements to a list",
    since: "1.0.0",
    complexity: PUSH_COMPLEXITY,
    handler: lpush,
    ..Command::DEFAULT
},
    Command {
    name: "rpush",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "list",
    summary: "Append one or multiple elements to a list",
    since: "1.0.0",
    complexity: PUSH_COMPLEXITY,
    handler: rpush,
    ..Command::DEFAULT
},
    Command {
    name: "lpushx",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "list",
    summary: "Prepend an element to a list, only if the list exists",
    since: "2.2.0",
    complexity: PUSH_COMPLEXITY,
    handler: lpushx,
    ..Command::DEFAULT
},
    Command {
    name: "rpushx",
    arity: -3,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "list",
    summary: "Append an element to a list, only if the list exists",
    since: "2.2.0",
    complexity: PUSH_COMPLEXITY,
    handler: rpushx,
    ..Command::DEFAULT
},
    Command {
    name: "lpop",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    group: "list",
    summary: "Remove and get the first elements in a list",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements returned",
    handler: lpop,
    ..Command::DEFAULT
},
    Command {
    name: "rpop",
    arity: -2,
    flags: flags::WRITE | flags::FAST,
    keys: KEY1,
    group: "list",
    summary: "Remove and get the last elements in a list",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements returned",
    handler: rpop,
    ..Command::DEFAULT
},
    Command {
    name: "llen",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "list",
    summary: "Get the length of a list",
    since: "1.0.0",
    complexity: "O(1)",
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
    handler: lset,
    ..Command::DEFAULT
},
    Command {
    name: "linsert",
    arity: 5,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "list",
    summary: "Insert an element before or after another element in a list",
    since: "2.2.0",
    complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
    handler: linsert,
    ..Command::DEFAULT
},
    Command {
    name: "lrem",
    arity: 4,
    flags: flags::WRITE,
    keys: KEY1,
    group: "list",
    summary: "Remove elements from a list",
    since: "1.0.0",
    complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
    handler: lrem,
    ..Command::DEFAULT
},
    Command {
    name: "ltrim",
    arity: 4,
    flags: flags::WRITE,
    keys: KEY1,
    group: "list",
    summary: "Trim a list to the specified range",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements to be removed by the operation.",
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
    handler: lpos,
    ..Command::DEFAULT
},
    Command {
    name: "lmove",
    arity: 5,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEYS_1_2,
    group: "list",
    summary: "Pop an element from a list, push it to another list and return it",
    since: "6.2.0",
    complexity: "O(1)",
    handler: lmove,
    ..Command::DEFAULT
},
    Command {
    name: "rpoplpush",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEYS_1_2,
    group: "list",
    summary: "Remove the last element in a list, prepend it to another list and return it",
    since: "1.2.0",
    complexity: "O(1)",
    handler: rpoplpush,
    ..Command::DEFAULT
},
    Command {
    name: "lmpop",
    arity: -4,
    flags: flags::WRITE | flags::MOVABLEKEYS,
    keys: Keys::Custom(lmpop_keys),
    group: "list",
    summary: "Pop elements from a list",
    since: "7.0.0",
    complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
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

// ---------------------------------------------------------------------------------------
// Effects shared with the blocking commands.

/// Pushes `elems` in order at the head (`head`) or tail of the list at `key`, creating it
/// (with node setting `fill`) unless `only_existing`. Returns the new length, or 0 when
/// `only_existing` and there is no list.
pub fn push_elements(
    l: &mut Locked<'_>,
    key: &[u8],
    elems: &[Bytes],
    head: bool,
    only_existing: bool,
    fill: i64,
) -> Result<usize, WrongType> {
    let list = if only_existing {
        match l.list_mut(key)? {
            Some(list) => list,
            None => return Ok(0),
        }
    } else {
        l.list_mut_or_create(key, fill)?
    };
    for e in elems {
        list.push(head, e);
    }
    Ok(list.len())
}

/// Pops up to `count` elements from the head (`head`) or tail and replies them as an array
/// in pop order (LPOP/RPOP with a count, LMPOP, BLMPOP). The caller deletes the key if the
/// list is left empty. Returns how many were popped.
pub fn pop_count_reply(
    out: &mut Reply<'_>,
    list: &mut ListValue,
    head: bool,
    count: usize,
) -> usize {
    let n = count.min(list.len());
    let start = if head { 0 } else { list.len() - n };
    reply_range(out, list, start, start + n, !head);
    list.remove_range(start, n);
    n
}

/// LMOVE's effect (also RPOPLPUSH, BLMOVE, BRPOPLPUSH): pops from `src`'s `from_head` end
/// and pushes onto `dst`'s `to_head` end, creating `dst` and deleting an emptied `src`.
/// Returns the element and whether `src` was deleted; `Ok(None)` when `src` does not
/// exist; WRONGTYPE (and no change) when either key holds another type.
pub fn move_element(
    l: &mut Locked<'_>,
    src: &[u8],
    dst: &[u8],
    from_head: bool,
    to_head: bool,
    fill: i64,
) -> Result<Option<(Vec<u8>, bool)>, WrongType> {
    let Some(list) = l.list_mut(src)? else {
        return Ok(None);
    };
    if src == dst {
        let Some(v) = list.pop(from_head) else {
            return Ok(None);
        };
        list.push(to_head, &v);
        return Ok(Some((v, false)));
    }
    // The destination's type is checked before anything moves.
    l.list_mut(dst)?;
    let Some(v) = l.list_mut(src)?.and_then(|s| s.pop(from_head)) else {
        return Ok(None);
    };
    l.list_mut_or_create(dst, fill)?.push(to_head, &v);
    let deleted = l.remove_if_empty_list(src);
    Ok(Some((v, deleted)))
}

/// The keyspace events of a pop (Redis's listElementsRemoved): `lpop`/`rpop`, then `del`
/// when the list was deleted. Call after the write, lock released.
pub fn notify_popped(ctx: &mut Ctx<'_>, key: &[u8], head: bool, deleted: bool) {
    ctx.notify(notify::LIST, if head { "lpop" } else { "rpop" }, key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

/// The events of a push (`lpush`/`rpush`), and the wake-up of clients blocked on `key`.
pub fn notify_pushed(ctx: &mut Ctx<'_>, key: &[u8], head: bool) {
    ctx.signal_key_ready(key);
    ctx.notify(notify::LIST, if head { "lpush" } else { "rpush" }, key);
}

/// LMOVE's events, in Redis's order (lmoveHandlePush, then the pop): the push on `dst`,
/// the pop on `src`, `del` if `src` was emptied; and `dst` signalled as ready.
pub fn notify_moved(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from_head: bool,
    to_head: bool,
    src_deleted: bool,
) {
    notify_pushed(ctx, dst, to_head);
    notify_popped(ctx, src, from_head, src_deleted);
}

/// LMPOP/BLMPOP arguments from `numkeys_idx` on: the range of the keys in argv, the end
/// and the count (1 when not given).
pub fn parse_mpop(
    argv: &[Bytes],
    numkeys_idx: usize,
) -> Result<(Range<usize>, bool, usize), CmdError> {
    let numkeys = parse_i64(&argv[numkeys_idx])
        .filter(|&n| n >= 1)
        .ok_or(CmdError::Static("ERR numkeys should be greater than 0"))?;
    let where_idx = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(numkeys_idx + 1))
        .filter(|&i| i < argv.len())
        .ok_or(CmdError::SYNTAX)?;
    let head = Where::parse(&argv[where_idx])?.head();
    let mut count = None;
    let mut j = where_idx + 1;
    while j < argv.len() {
        if count.is_none() && argv[j].eq_ignore_ascii_case(b"count") && j + 1 < argv.len() {
            j += 1;
            let c = parse_i64(&argv[j])
                .filter(|&c| c >= 1)
                .ok_or(CmdError::Static("ERR count should be greater than 0"))?;
            count = Some(usize::try_from(c).unwrap_or(usize::MAX));
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    Ok((numkeys_idx + 1..where_idx, head, count.unwrap_or(1)))
}

/// LMPOP's effect: pops from the first non-empty list of `keys`, replying `[key, [elements]]`.
/// Returns the key popped from and whether it was deleted; None (and nothing replied)
/// when every key is missing; WRONGTYPE at the first key of another type met before a
/// list.
pub fn mpop_reply(
    out: &mut Reply<'_>,
    l: &mut Locked<'_>,
    keys: &[Bytes],
    head: bool,
    count: usize,
) -> Result<Option<(Bytes, bool)>, WrongType> {
    for key in keys {
        let Some(list) = l.list_mut(key)? else {
            continue;
        };
        if list.is_empty() {
            continue;
        }
        out.array(2);
        out.bulk(key);
        pop_count_reply(out, list, head, count);
        let deleted = l.remove_if_empty_list(key);
        return Ok(Some((key.clone(), deleted)));
    }
    Ok(None)
}

/// LMPOP's key positions: numkeys keys after numkeys (none when it is not a valid count
/// within the arguments).
fn lmpop_keys(argv: &[Bytes]) -> Vec<usize> {
    let Some(n) = argv.get(1).and_then(|a| parse_i64(a)) else {
        return Vec::new();
    };
    match usize::try_from(n) {
        Ok(n) if n >= 1 && n < argv.len().saturating_sub(1) => (2..2 + n).collect(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------
// Handlers.

fn lpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, true, false)
}

fn rpush(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, false, false)
}

fn lpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, true, true)
}

fn rpushx(ctx: &mut Ctx<'_>) -> CmdResult {
    push_generic(ctx, false, true)
}

fn push_generic(ctx: &mut Ctx<'_>, head: bool, only_existing: bool) -> CmdResult {
    let argv = ctx.argv;
    let key = &argv[1];
    let fill = fill(ctx);
    let mut l = ctx.lock1(key);
    let len = push_elements(&mut l, key, &argv[2..], head, only_existing, fill)?;
    drop(l);
    if len > 0 {
        notify_pushed(ctx, key, head);
    }
    ctx.out.int(len as i64);
    Ok(())
}

fn lpop(ctx: &mut Ctx<'_>) -> CmdResult {
    pop_generic(ctx, true)
}

fn rpop(ctx: &mut Ctx<'_>) -> CmdResult {
    pop_generic(ctx, false)
}

fn pop_generic(ctx: &mut Ctx<'_>, head: bool) -> CmdResult {
    let argv = ctx.argv;
    if argv.len() > 3 {
        return Err(CmdError::arity(if head { "lpop" } else { "rpop" }));
    }
    let count = match argv.get(2) {
        Some(a) => Some(non_negative(
            a,
            "ERR value is out of range, must be positive",
        )?),
        None => None,
    };
    let key = &argv[1];
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        match count {
            Some(_) => ctx.out.null_array(),
            None => ctx.out.null(),
        }
        return Ok(());
    };
    let popped = match count {
        None => match list.pop(head) {
            Some(v) => {
                ctx.out.bulk(&v);
                true
            }
            None => {
                ctx.out.null();
                false
            }
        },
        Some(0) => {
            ctx.out.array(0);
            false
        }
        Some(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            pop_count_reply(&mut ctx.out, list, head, n) > 0
        }
    };
    // Redis never keeps an empty list; asking the list saves a second lookup.
    let deleted = list.is_empty() && l.remove(key);
    drop(l);
    if popped {
        notify_popped(ctx, key, head, deleted);
    }
    Ok(())
}

fn llen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = l.list(key)?.map_or(0, ListValue::len);
    ctx.out.int(n as i64);
    Ok(())
}

fn lrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list(key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    match clamp_range(start, end, list.len()) {
        Some((s, e)) => reply_range(&mut ctx.out, list, s, e + 1, false),
        None => ctx.out.array(0),
    }
    Ok(())
}

fn lindex(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list(key)? else {
        ctx.out.null();
        return Ok(());
    };
    let index = ctx.int_arg(2)?;
    match resolve_index(index, list.len()).and_then(|i| list.get(i)) {
        Some(e) => {
            let mut buf = [0u8; 20];
            ctx.out.bulk(e.bytes(&mut buf));
        }
        None => ctx.out.null(),
    }
    Ok(())
}

fn lset(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        return Err(CmdError::NO_SUCH_KEY);
    };
    let index = ctx.int_arg(2)?;
    match resolve_index(index, list.len()) {
        Some(i) if list.set(i, ctx.arg(3)) => {
            drop(l);
            ctx.notify(notify::LIST, "lset", key);
            ctx.out.ok();
            Ok(())
        }
        _ => Err(CmdError::Static("ERR index out of range")),
    }
}

fn linsert(ctx: &mut Ctx<'_>) -> CmdResult {
    let w = ctx.arg(2);
    let after = if w.eq_ignore_ascii_case(b"after") {
        true
    } else if w.eq_ignore_ascii_case(b"before") {
        false
    } else {
        return Err(CmdError::SYNTAX);
    };
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        ctx.out.int(0);
        return Ok(());
    };
    if list.insert_at_pivot(ctx.arg(3), ctx.arg(4), after) {
        let len = list.len();
        drop(l);
        ctx.notify(notify::LIST, "linsert", key);
        ctx.out.int(len as i64);
    } else {
        ctx.out.int(-1);
    }
    Ok(())
}

fn lrem(ctx: &mut Ctx<'_>) -> CmdResult {
    let toremove = ctx.int_arg(2)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list_mut(key)? else {
        ctx.out.int(0);
        return Ok(());
    };
    // LREM key i64::MIN: Redis negates it to itself, a limit never reached.
    let limit = usize::try_from(toremove.unsigned_abs()).unwrap_or(usize::MAX);
    let removed = list.remove_matching(ctx.arg(3), limit, toremove < 0);
    let deleted = l.remove_if_empty_list(key);
    drop(l);
    if removed > 0 {
        ctx.notify(notify::LIST, "lrem", key);
    }
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
    ctx.out.int(removed as i64);
    Ok(())
}

fn ltrim(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    if let Some(list) = l.list_mut(key)? {
        let keep = clamp_range(start, end, list.len());
        list.trim(keep);
        let deleted = l.remove_if_empty_list(key);
        drop(l);
        ctx.notify(notify::LIST, "ltrim", key);
        if deleted {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    ctx.out.ok();
    Ok(())
}

fn lpos(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let (mut rank, mut count, mut maxlen): (i64, i64, i64) = (1, -1, 0);
    let mut j = 3;
    while j < argv.len() {
        let opt = &argv[j];
        let more = j + 1 < argv.len();
        if opt.eq_ignore_ascii_case(b"rank") && more {
            j += 1;
            rank = parse_i64(&argv[j]).ok_or(CmdError::NOT_INTEGER)?;
            if rank == 0 {
                return Err(CmdError::Static(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if opt.eq_ignore_ascii_case(b"count") && more {
            j += 1;
            count = non_negative(&argv[j], "ERR COUNT can't be negative")?;
        } else if opt.eq_ignore_ascii_case(b"maxlen") && more {
            j += 1;
            maxlen = non_negative(&argv[j], "ERR MAXLEN can't be negative")?;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    // A negative rank searches from the tail. Redis 7.0 negates i64::MIN to itself, which
    // then matches from the first match on and never stops at COUNT: wrapping arithmetic
    // below reproduces that.
    let from_tail = rank < 0;
    if from_tail {
        rank = rank.wrapping_neg();
    }
    let key = &argv[1];
    let mut l = ctx.lock1(key);
    let Some(list) = l.list(key)? else {
        if count != -1 {
            ctx.out.array(0);
        } else {
            ctx.out.null();
        }
        return Ok(());
    };
    let llen = i64::try_from(list.len()).unwrap_or(i64::MAX);
    let needle = ListValue::needle(&argv[2]);
    let it: Box<dyn Iterator<Item = _>> = if from_tail {
        Box::new(list.iter().rev())
    } else {
        Box::new(list.iter())
    };
    let (mut index, mut matches) = (0i64, 0i64);
    let mut found = Vec::new();
    for e in it {
        if maxlen != 0 && index >= maxlen {
            break;
        }
        if e == needle {
            matches += 1;
            let at = if from_tail { llen - index - 1 } else { index };
            if matches >= rank {
                found.push(at);
                if count == -1
                    || (count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count)
                {
                    break;
                }
            }
        }
        index += 1;
    }
    if count != -1 {
        ctx.out.array(found.len());
        for i in found {
            ctx.out.int(i);
        }
    } else {
        match found.first() {
            Some(&i) => ctx.out.int(i),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn lmove(ctx: &mut Ctx<'_>) -> CmdResult {
    let from = Where::parse(ctx.arg(3))?;
    let to = Where::parse(ctx.arg(4))?;
    lmove_generic(ctx, from, to)
}

fn rpoplpush(ctx: &mut Ctx<'_>) -> CmdResult {
    lmove_generic(ctx, Where::Right, Where::Left)
}

fn lmove_generic(ctx: &mut Ctx<'_>, from: Where, to: Where) -> CmdResult {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    let fill = fill(ctx);
    let mut l = ctx.lock(&[src, dst]);
    let moved = move_element(&mut l, src, dst, from.head(), to.head(), fill)?;
    drop(l);
    match moved {
        Some((v, deleted)) => {
            notify_moved(ctx, src, dst, from.head(), to.head(), deleted);
            ctx.out.bulk(&v);
        }
        None => ctx.out.null(),
    }
    Ok(())
}

fn lmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let (keys, head, count) = parse_mpop(argv, 1)?;
    let keys = &argv[keys];
    let mut l = ctx.lock(keys);
    let popped = mpop_reply(&mut ctx.out, &mut l, keys, head, count)?;
    drop(l);
    match popped {
        Some((key, deleted)) => notify_popped(ctx, &key, head, deleted),
        None => ctx.out.null_array(),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
                .map(|a| Bytes::from(a.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            lmpop_keys(&argv(&["lmpop", "2", "a", "b", "left"])),
            vec![2, 3]
        );
        assert_eq!(lmpop_keys(&argv(&["lmpop", "2", "a", "b"])), vec![2, 3]);
        assert!(lmpop_keys(&argv(&["lmpop", "3", "a", "b"])).is_empty());
        assert!(lmpop_keys(&argv(&["lmpop", "0", "a", "left"])).is_empty());
        assert!(lmpop_keys(&argv(&["lmpop", "-1", "a", "left"])).is_empty());
        assert!(lmpop_keys(&argv(&["lmpop", "9223372036854775807", "a"])).is_empty());
    }
}
