//! Server administration: DBSIZE FLUSHDB FLUSHALL SWAPDB TIME SHUTDOWN INFO.

use crate::commands::info;
use crate::config::ShutdownFlags;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "server",
    ..Command::DEFAULT
};

pub const COMMANDS: &[Command] = &[
    Command {
        name: "dbsize",
        arity: 1,
        flags: READONLY | FAST | DB_SHARDS,
        summary: "Returns the number of keys in the database.",
        since: "1.0.0",
        tips: &["request_policy:all_shards", "response_policy:agg_sum"],
        acl: &["@keyspace"],
        handler: dbsize,
        ..FAMILY
    },
    Command {
        name: "flushdb",
        arity: -1,
        flags: WRITE | DB_SHARDS,
        summary: "Removes all keys from the current database.",
        since: "1.0.0",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        acl: &["@keyspace", "@dangerous"],
        args: "[async=(ASYNC | SYNC)]",
        handler: flushdb,
        ..FAMILY
    },
    Command {
        name: "flushall",
        arity: -1,
        flags: WRITE | ALL_SHARDS,
        summary: "Removes all keys from all databases.",
        since: "1.0.0",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        acl: &["@keyspace", "@dangerous"],
        args: "[async=(ASYNC | SYNC)]",
        handler: flushall,
        ..FAMILY
    },
    Command {
        name: "swapdb",
        arity: 3,
        flags: WRITE | FAST | ALL_SHARDS,
        summary: "Swaps two Redis databases.",
        since: "4.0.0",
        acl: &["@keyspace", "@dangerous"],
        args: "index1#int index2#int",
        handler: swapdb,
        ..FAMILY
    },
    Command {
        name: "time",
        arity: 1,
        flags: LOADING | STALE | FAST,
        summary: "Returns the server time.",
        since: "2.6.0",
        tips: &["nondeterministic_output"],
        handler: time,
        ..FAMILY
    },
    Command {
        name: "shutdown",
        arity: -1,
        flags: ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY,
        summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        since: "1.0.0",
        args: "[nosave_save=(NOSAVE | SAVE)] [NOW] [FORCE] [ABORT]",
        handler: shutdown,
        ..FAMILY
    },
    Command {
        name: "info",
        arity: -1,
        flags: LOADING | STALE,
        summary: "Returns information and statistics about the server.",
        since: "1.0.0",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
        acl: &["@dangerous"],
        args: "[section]...",
        handler: info_cmd,
        ..FAMILY
    },
];

fn dbsize(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.db().len() as i64);
    Ok(())
}

/// FLUSHDB/FLUSHALL's optional ASYNC|SYNC; the default follows lazyfree-lazy-user-flush.
fn flush_mode(ctx: &Ctx<'_>) -> Result<bool, CmdError> {
    match ctx.argv.len() {
        1 => Ok(ctx.config().get().lazyfree_lazy_user_flush),
        2 => match ctx.lower(1).as_slice() {
            b"async" => Ok(true),
            b"sync" => Ok(false),
            _ => Err(CmdError::SYNTAX),
        },
        _ => Err(CmdError::SYNTAX),
    }
}

/// Frees flushed tables holding `keys` keys on a background thread when asked to
/// (ASYNC), else right here.
fn dispose<T: Send + 'static>(garbage: T, keys: usize, in_background: bool) {
    if in_background {
        crate::services::lazyfree::free_later(garbage, keys as u64);
    }
}

fn flushdb(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = flush_mode(ctx)?;
    touch_watched(ctx, &[(ctx.client.db, None)]);
    let keys = ctx.db().len();
    let tracked = ctx.invalidate_all();
    dispose((ctx.db().flush(), tracked), keys, lazy);
    // XREADGROUP clients blocked on a stream that went answer an error.
    ctx.signal_db_ready(ctx.client.db);
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = flush_mode(ctx)?;
    touch_watched_all(ctx);
    let ks = ctx.keyspace();
    let keys = (0..ks.db_count()).map(|d| ks.db(d).len()).sum();
    let tracked = ctx.invalidate_all();
    dispose((ctx.keyspace().flush_all(), tracked), keys, lazy);
    for db in 0..ctx.keyspace().db_count() {
        ctx.signal_db_ready(db);
    }
    ctx.out.ok();
    Ok(())
}

/// `touch_watched` for every database emptied (FLUSHALL, DEBUG RELOAD).
pub(crate) fn touch_watched_all(ctx: &Ctx<'_>) {
    let all: Vec<(usize, Option<usize>)> =
        (0..ctx.keyspace().db_count()).map(|d| (d, None)).collect();
    touch_watched(ctx, &all);
}

/// Before FLUSHDB, FLUSHALL or SWAPDB replaces the contents of databases: for each
/// (emptied, replaced with), fails the EXEC of every client watching a key of the emptied
/// database that exists there or in the one replacing it, as Redis's
/// touchAllWatchedKeysInDb. Looking a key up removes it if it has expired, which tells
/// the watches that saw it expired already (their key going away changes nothing).
fn touch_watched(ctx: &Ctx<'_>, dbs: &[(usize, Option<usize>)]) {
    let w = ctx.watches();
    let exists = |db: usize, k: &[u8]| ctx.keyspace().db(db).lock1(k).contains(k);
    let mut hit = Vec::new();
    for &(emptied, replaced_with) in dbs {
        for k in w.keys_in(emptied) {
            // Both looked up: each removes its own copy if it has expired.
            let here = exists(emptied, &k);
            let there = replaced_with.is_some_and(|r| exists(r, &k));
            if here || there {
                hit.push((emptied, k));
            }
        }
    }
    w.touch_keys(&hit);
}

fn swapdb(ctx: &mut Ctx<'_>) -> CmdResult {
    let a = ctx
        .int_arg(1)
        .map_err(|_| CmdError::err("invalid first DB index"))?;
    let b = ctx
        .int_arg(2)
        .map_err(|_| CmdError::err("invalid second DB index"))?;
    let n = ctx.keyspace().db_count() as i64;
    if !(0..n).contains(&a) || !(0..n).contains(&b) {
        return Err(CmdError::DB_RANGE);
    }
    let (a, b) = (a as usize, b as usize);
    if a == b {
        // Nothing moves (Redis does not touch watched keys either).
        ctx.out.ok();
        return Ok(());
    }
    touch_watched(ctx, &[(a, Some(b)), (b, Some(a))]);
    ctx.keyspace().swap(a, b);
    // Clients blocked in either database may find their keys there now.
    ctx.signal_db_ready(a);
    ctx.signal_db_ready(b);
    ctx.out.ok();
    Ok(())
}

fn time(ctx: &mut Ctx<'_>) -> CmdResult {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array(2);
    ctx.out.bulk_int(now.as_secs() as i64);
    ctx.out.bulk_int(now.subsec_micros() as i64);
    Ok(())
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the sequence is `services::shutdown`;
/// the caller waits for it, and gets no reply unless it is cancelled.
fn shutdown(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut flags = 0;
    let mut abort = false;
    for i in 1..ctx.argv.len() {
        flags |= match ctx.lower(i).as_slice() {
            b"nosave" => ShutdownFlags::NOSAVE,
            b"save" => ShutdownFlags::SAVE,
            b"now" => ShutdownFlags::NOW,
            b"force" => ShutdownFlags::FORCE,
            b"abort" => {
                abort = true;
                0
            }
            _ => return Err(CmdError::SYNTAX),
        };
    }
    let both = ShutdownFlags::NOSAVE | ShutdownFlags::SAVE;
    if (abort && flags != 0) || flags & both == both {
        return Err(CmdError::SYNTAX);
    }
    let server = ctx
        .server()
        .arc()
        .ok_or(CmdError::Static("ERR no server"))?;
    if abort {
        if !server.shutdown.abort() {
            return Err(CmdError::err("No shutdown in progress."));
        }
        ctx.out.ok();
        return Ok(());
    }
    if flags & ShutdownFlags::NOW == 0 && !ctx.may_block() {
        return Err(CmdError::err(
            "SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client",
        ));
    }
    // Under a busy script only SHUTDOWN NOSAVE goes through, as in Redis: a save would wait
    // for the script's writes, which may never end.
    let busy = ctx
        .scripts()
        .busy
        .load(std::sync::atomic::Ordering::Relaxed);
    if flags & ShutdownFlags::NOSAVE == 0 && busy {
        return Err(ctx.scripts().busy_error());
    }
    let ticket = crate::services::shutdown::begin(&server, flags)
        .map_err(|e| CmdError::err(format!("Errors trying to SHUTDOWN: {e}")))?;
    if !ctx.may_block() {
        // SHUTDOWN NOW inside MULTI: like Redis, which exits before it replies.
        ctx.client.close_after_reply = true;
        return Ok(());
    }
    ctx.reply_later(Box::pin(async move {
        server.shutdown.cancelled(ticket).await;
        format!("-ERR {}\r\n", crate::services::shutdown::FAILED).into_bytes()
    }));
    Ok(())
}

fn info_cmd(ctx: &mut Ctx<'_>) -> CmdResult {
    let sections: Vec<String> = ctx.argv[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let text = info::render(ctx.server(), &sections);
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}
