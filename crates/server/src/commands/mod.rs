//! Command families, one file or folder each. Each declares its commands in a `COMMANDS`
//! table next to their handlers (a folder's in its `mod.rs`, with the handlers in files
//! named for what they hold); `FAMILIES` lists every table.

use crate::exec::command::{CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::{Locked, WrongType};

pub mod acl;
pub mod admin;
pub mod bitmap;
pub mod blocking;
mod caching;
pub mod client_list;
pub mod cluster;
pub mod config;
pub mod connection;
pub mod debug;
pub mod dump;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod hyperloglog;
pub mod info;
pub mod introspection;
pub mod keys;
pub mod latency;
pub mod list;
pub mod lolwut;
pub mod memory;
pub mod migrate;
mod pause;
pub mod persistence;
pub(crate) mod pqsort;
pub mod pubsub;
pub(crate) mod random;
pub mod replication;
pub(crate) mod scan;
mod script_flags;
pub mod scripting;
pub mod set;
pub mod slowlog;
pub mod sort;
pub mod stream;
pub mod strings;
pub mod transactions;
pub mod zset;

pub const FAMILIES: &[&[Command]] = &[
    connection::COMMANDS,
    acl::COMMANDS,
    admin::COMMANDS,
    debug::COMMANDS,
    config::COMMANDS,
    introspection::COMMANDS,
    memory::COMMANDS,
    strings::COMMANDS,
    dump::COMMANDS,
    migrate::COMMANDS,
    bitmap::COMMANDS,
    keys::COMMANDS,
    hash::COMMANDS,
    list::COMMANDS,
    set::COMMANDS,
    zset::COMMANDS,
    geo::COMMANDS,
    stream::COMMANDS,
    blocking::COMMANDS,
    hyperloglog::COMMANDS,
    sort::COMMANDS,
    persistence::COMMANDS,
    scripting::COMMANDS,
    transactions::COMMANDS,
    pubsub::COMMANDS,
    slowlog::COMMANDS,
    replication::COMMANDS,
    latency::COMMANDS,
    lolwut::COMMANDS,
    cluster::COMMANDS,
];

/// Redis's answer to a container's subcommand given more arguments than it takes, e.g.
/// "ERR unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP."
pub fn wrong_subcommand_args(ctx: &Ctx<'_>) -> CmdError {
    crate::exec::table::wrong_subcommand_args(ctx.argv)
}

/// The handler of a container (CLIENT, CONFIG...). Dispatch resolves subcommands before
/// handlers run, so this only answers when a container is called in a way it can't resolve.
pub fn container(ctx: &mut Ctx<'_>) -> CmdResult {
    // An OPAQUE container (DEBUG) runs its own handler for an argument it does not know.
    if ctx.argv.len() >= 2 {
        return Err(wrong_subcommand_args(ctx));
    }
    Err(CmdError::arity(
        &String::from_utf8_lossy(ctx.arg(0)).to_ascii_lowercase(),
    ))
}

/// A HELP reply: one simple string per line.
pub fn help_text<S: AsRef<str>>(ctx: &mut Ctx<'_>, lines: &[S]) -> CmdResult {
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l.as_ref());
    }
    Ok(())
}

/// A container's HELP: one line per subcommand, from the declarations themselves.
pub fn help(ctx: &mut Ctx<'_>, container: &str, subs: &[Command]) -> CmdResult {
    let mut lines = vec![format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    )];
    for s in subs {
        lines.push(s.name.to_ascii_uppercase());
        lines.push(format!("    {}", s.summary));
    }
    help_text(ctx, &lines)
}

/// HDEL, SREM, ZREM: removes the members named from argv[2..] from the collection at
/// argv[1], deletes the key once the collection is empty, replies with the count and emits
/// `event` (then `del`) as Redis does. `lookup` is the type's write lookup
/// (`Locked::hash_mut`...), `remove` removes one member.
/// What a *STORE command did to its destination `dst`, its lock released: `event` (of
/// `class`) when it stored `n > 0` elements, with the key signalled ready for blocked
/// clients when `ready`; `del` when an empty result deleted it. One that did neither
/// changed nothing, and is not journaled or replicated (Redis's dirty stays).
pub(crate) fn stored(
    ctx: &mut Ctx<'_>,
    dst: &[u8],
    (class, event): (u32, &str),
    n: usize,
    removed: bool,
    ready: bool,
) {
    if n > 0 {
        if ready {
            ctx.signal_key_ready(dst);
        }
        ctx.notify(class, event, dst);
    } else if removed {
        ctx.notify(notify::GENERIC, "del", dst);
    } else {
        ctx.no_effect();
    }
}

pub(crate) fn remove_members<'a, T>(
    ctx: &mut Ctx<'a>,
    lookup: for<'l> fn(&'l mut Locked<'a>, &[u8]) -> Result<Option<&'l mut T>, WrongType>,
    remove: fn(&mut T, &[u8]) -> bool,
    is_empty: fn(&T) -> bool,
    class: u32,
    event: &str,
) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(c) = lookup(&mut l, key)? else {
        drop(l);
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    };
    let mut deleted = 0;
    for m in &ctx.argv[2..] {
        if remove(c, m) {
            deleted += 1;
            if is_empty(c) {
                break;
            }
        }
    }
    let removed = is_empty(c) && l.remove(key);
    drop(l);
    if deleted > 0 {
        ctx.notify(class, event, key);
        if removed {
            ctx.notify(notify::GENERIC, "del", key);
        }
    } else {
        // Nothing changed: nothing to journal or replicate, as Redis (its dirty stays).
        ctx.no_effect();
    }
    ctx.out.int(deleted);
    Ok(())
}
