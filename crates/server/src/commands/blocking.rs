//! Blocking pops: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP, as Redis
//! 7.0's t_list.c / t_zset.c (argument checks and their order, error texts, replies).
//!
//! Each handler first tries to serve at once, exactly as the non-blocking command does
//! (same reply, same keyspace events); when every key is missing it asks to block with
//! `ctx.block_on` (see crate::services::blocking), and is re-run as the waiter when a write signals
//! one of its keys. A re-run treats a key holding another type as not ready (Redis 7.0
//! leaves such a client blocked: a ZADD on a key a BLPOP waits for does not serve it); a
//! BLMOVE served while its destination holds another type answers WRONGTYPE, as Redis
//! 7.0.15 does.
//! A timeout replies a null array, for BLMOVE and BRPOPLPUSH too (Redis answers `*-1`
//! in RESP2 for every blocked list or zset command, `_` in RESP3).

use super::list::{self, parse_mpop, pop_count_reply, Where};
use super::zset::{self, parse_zmpop, zpop_reply};
use crate::exec::command::{flags, ks, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::services::blocking::parse_timeout;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use strata_resp::Reply;

const W: u32 = flags::WRITE;
const B: u32 = flags::BLOCKING;
const NS: u32 = flags::NOSCRIPT;

pub const COMMANDS: &[Command] = &[
    Command {
    name: "blpop",
    arity: -3,
    flags: W | NS | B,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, -2, 1),
    ]),
    group: "list",
    summary: "Remove and get the first element in a list, or block until one is available",
    since: "2.0.0",
    complexity: "O(N) where N is the number of provided keys.",
    args: "key#key... timeout#double",
    handler: blpop,
    ..Command::DEFAULT
},
    Command {
    name: "brpop",
    arity: -3,
    flags: W | NS | B,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, -2, 1),
    ]),
    group: "list",
    summary: "Remove and get the last element in a list, or block until one is available",
    since: "2.0.0",
    complexity: "O(N) where N is the number of provided keys.",
    args: "key#key... timeout#double",
    handler: brpop,
    ..Command::DEFAULT
},
    Command {
    name: "blmove",
    arity: 6,
    flags: W | flags::DENYOOM | NS | B,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
        KeySpec::range(ks::RW | ks::INSERT, 2, 0, 1),
    ]),
    group: "list",
    summary: "Pop an element from a list, push it to another list and return it; or block until one is available",
    since: "6.2.0",
    complexity: "O(1)",
    args: "source#key destination#key1 wherefrom=(LEFT | RIGHT) whereto=(LEFT | RIGHT) timeout#double",
    handler: blmove,
    ..Command::DEFAULT
},
    Command {
    name: "brpoplpush",
    arity: 4,
    flags: W | flags::DENYOOM | NS | B,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, 0, 1),
        KeySpec::range(ks::RW | ks::INSERT, 2, 0, 1),
    ]),
    group: "list",
    summary: "Pop an element from a list, push it to another list and return it; or block until one is available",
    since: "2.2.0",
    complexity: "O(1)",
    args: "source#key destination#key1 timeout#double",
    handler: brpoplpush,
    ..Command::DEFAULT
},
    Command {
    name: "blmpop",
    arity: -5,
    flags: W | B | flags::MOVABLEKEYS,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RW | ks::ACCESS | ks::DELETE, 2),
    ]),
    group: "list",
    summary: "Pop elements from a list, or block until one is available",
    since: "7.0.0",
    complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
    args: "timeout#double numkeys#int key#key... where=(LEFT | RIGHT) [COUNT:count#int]",
    handler: blmpop,
    ..Command::DEFAULT
},
    Command {
    name: "bzpopmin",
    arity: -3,
    flags: W | NS | B | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, -2, 1),
    ]),
    group: "sorted-set",
    summary: "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available",
    since: "5.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    args: "key#key... timeout#double",
    handler: bzpopmin,
    ..Command::DEFAULT
},
    Command {
    name: "bzpopmax",
    arity: -3,
    flags: W | NS | B | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 1, -2, 1),
    ]),
    group: "sorted-set",
    summary: "Remove and return the member with the highest score from one or more sorted sets, or block until one is available",
    since: "5.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    args: "key#key... timeout#double",
    handler: bzpopmax,
    ..Command::DEFAULT
},
    Command {
    name: "bzmpop",
    arity: -5,
    flags: W | B | flags::MOVABLEKEYS,
    keys: Keys::Specs(&[
        KeySpec::keynum(ks::RW | ks::ACCESS | ks::DELETE, 2),
    ]),
    group: "sorted-set",
    summary: "Remove and return members with scores in a sorted set or block until one is available",
    since: "7.0.0",
    complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    args: "timeout#double numkeys#int key#key... where=(MIN | MAX) [COUNT:count#int]",
    handler: bzmpop,
    ..Command::DEFAULT
},
];

/// The reply of a timeout (and of CLIENT UNBLOCK ... TIMEOUT).
fn timed_out(out: &mut Reply<'_>) {
    out.null_array();
}

/// True when the command runs as a waiter being served (crate::services::blocking::serve_ready, or
/// the waiter's own check right after registering): the client is still registered as
/// blocked while its command re-runs, and never while it runs a command itself.
pub(crate) fn rerun(ctx: &Ctx<'_>) -> bool {
    ctx.client.info.blocked.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------------------
// Lists

fn blpop(ctx: &mut Ctx<'_>) -> CmdResult {
    bpop_generic(ctx, Where::Left)
}

fn brpop(ctx: &mut Ctx<'_>) -> CmdResult {
    bpop_generic(ctx, Where::Right)
}

fn bpop_generic(ctx: &mut Ctx<'_>, w: Where) -> CmdResult {
    let argv = ctx.argv;
    let deadline = parse_timeout(&argv[argv.len() - 1], ctx.now_ms)?;
    list_pop_or_block(ctx, &argv[1..argv.len() - 1], w.head(), None, deadline)
}

fn blmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let (keys, head, count) = parse_mpop(argv, 2)?;
    let deadline = parse_timeout(&argv[1], ctx.now_ms)?;
    list_pop_or_block(ctx, &argv[keys], head, Some(count), deadline)
}

/// Redis's blockingPopGenericCommand: pops from the first non-empty list of `keys`
/// (one element replied `[key, element]`, or with `count` `[key, [elements]]`), or blocks.
fn list_pop_or_block(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    head: bool,
    count: Option<usize>,
    deadline: u64,
) -> CmdResult {
    let rerun = rerun(ctx);
    let mut l = ctx.lock(keys);
    for key in keys {
        let list = match l.list_mut(key) {
            Ok(Some(list)) if !list.is_empty() => list,
            Ok(_) => continue,
            Err(_) if rerun => continue,
            Err(e) => return Err(e.into()),
        };
        ctx.out.array(2);
        ctx.out.bulk(key);
        let popped = match count {
            Some(n) => Some(pop_count_reply(&mut ctx.out, list, head, n)),
            None => {
                match list.pop(head) {
                    Some(v) => ctx.out.bulk(&v),
                    None => ctx.out.null(),
                }
                None
            }
        };
        let deleted = l.remove_if_empty_list(key);
        drop(l);
        list::propagate_pop(ctx, key, head, popped);
        list::notify_popped(ctx, key, head, deleted);
        return Ok(());
    }
    drop(l);
    ctx.block_on(keys.to_vec(), deadline, timed_out);
    Ok(())
}

fn blmove(ctx: &mut Ctx<'_>) -> CmdResult {
    let from = Where::parse(ctx.arg(3))?;
    let to = Where::parse(ctx.arg(4))?;
    let deadline = parse_timeout(ctx.arg(5), ctx.now_ms)?;
    blmove_generic(ctx, from, to, deadline)
}

fn brpoplpush(ctx: &mut Ctx<'_>) -> CmdResult {
    let deadline = parse_timeout(ctx.arg(3), ctx.now_ms)?;
    blmove_generic(ctx, Where::Right, Where::Left, deadline)
}

/// Redis's blmoveGenericCommand: LMOVE when the source list exists, else block on it.
fn blmove_generic(ctx: &mut Ctx<'_>, from: Where, to: Where, deadline: u64) -> CmdResult {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    let rerun = rerun(ctx);
    let fill = ctx.keyspace().encodings.list_size();
    let mut l = ctx.lock(&[src, dst]);
    let ready = match l.list_mut(src) {
        Ok(s) => s.is_some_and(|s| !s.is_empty()),
        Err(_) if rerun => false,
        Err(e) => return Err(e.into()),
    };
    if ready {
        let moved = list::move_element(&mut l, src, dst, from.head(), to.head(), fill)?;
        drop(l);
        match moved {
            Some((v, deleted)) => {
                propagate_move(ctx, from, to);
                list::notify_moved(ctx, src, dst, from.head(), to.head(), deleted);
                ctx.out.bulk(&v);
            }
            None => ctx.out.null(),
        }
        return Ok(());
    }
    drop(l);
    if !ctx.may_block() {
        // Redis answers a null bulk here, not the null array of a real timeout.
        ctx.out.null();
        return Ok(());
    }
    ctx.block_on(vec![ctx.argv[1].clone()], deadline, timed_out);
    Ok(())
}

/// A served BLMOVE goes to the journal and replicas as LMOVE, BRPOPLPUSH as RPOPLPUSH, as
/// Redis propagates them: replayed, the blocking form could block.
fn propagate_move(ctx: &mut Ctx<'_>, from: Where, to: Where) {
    if !ctx.effects_wanted() {
        return;
    }
    let argv = ctx.argv;
    let end = |w: Where| Bytes::from_static(if w.head() { b"left" } else { b"right" });
    let cmd = if argv[0].eq_ignore_ascii_case(b"brpoplpush") {
        vec![
            Bytes::from_static(b"RPOPLPUSH"),
            argv[1].clone(),
            argv[2].clone(),
        ]
    } else {
        let name = Bytes::from_static(b"LMOVE");
        vec![name, argv[1].clone(), argv[2].clone(), end(from), end(to)]
    };
    ctx.rewrite1(cmd);
}

// ---------------------------------------------------------------------------------------
// Sorted sets

fn bzpopmin(ctx: &mut Ctx<'_>) -> CmdResult {
    bzpop_generic(ctx, false)
}

fn bzpopmax(ctx: &mut Ctx<'_>) -> CmdResult {
    bzpop_generic(ctx, true)
}

fn bzpop_generic(ctx: &mut Ctx<'_>, max: bool) -> CmdResult {
    let argv = ctx.argv;
    let deadline = parse_timeout(&argv[argv.len() - 1], ctx.now_ms)?;
    zset_pop_or_block(ctx, &argv[1..argv.len() - 1], max, -1, false, deadline)
}

fn bzmpop(ctx: &mut Ctx<'_>) -> CmdResult {
    let (first, end, max, count) = parse_zmpop(ctx, 2)?;
    let deadline = parse_timeout(ctx.arg(1), ctx.now_ms)?;
    let argv = ctx.argv;
    zset_pop_or_block(ctx, &argv[first..end], max, count, true, deadline)
}

/// Redis's blockingGenericZpopCommand: BZPOPMIN/BZPOPMAX reply `[key, member, score]`,
/// BZMPOP (`mpop`) `[key, [[member, score]...]]`; or block.
fn zset_pop_or_block(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    max: bool,
    count: i64,
    mpop: bool,
    deadline: u64,
) -> CmdResult {
    let rerun = rerun(ctx);
    let mut l = ctx.lock(keys);
    for key in keys {
        match l.zset_peek(key) {
            Ok(Some(z)) if !z.is_empty() => {}
            Ok(_) => continue,
            Err(_) if rerun => continue,
            Err(e) => return Err(e.into()),
        }
        let popped = zpop_reply(&mut ctx.out, &mut l, &[key], max, true, count, mpop, mpop)?;
        drop(l);
        if let Some((k, n, deleted)) = popped {
            zset::propagate_pop(ctx, &k, max, mpop.then_some(n));
            zset::notify_popped(ctx, &k, max, deleted);
        }
        return Ok(());
    }
    drop(l);
    ctx.block_on(keys.to_vec(), deadline, timed_out);
    Ok(())
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
    fn mpop_key_positions() {
        let argv = |s: &[&str]| {
            s.iter()
                .map(|a| Bytes::from(a.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys_of(&argv(&["blmpop", "0", "2", "a", "b", "left"])),
            vec![3, 4]
        );
        assert!(keys_of(&argv(&["blmpop", "0", "3", "a", "b"])).is_empty());
        assert!(keys_of(&argv(&["blmpop", "0", "0", "a", "left"])).is_empty());
        assert!(keys_of(&argv(&["bzmpop", "0", "-1", "a", "min"])).is_empty());
        assert!(keys_of(&argv(&["bzmpop", "0"])).is_empty());
    }
}
