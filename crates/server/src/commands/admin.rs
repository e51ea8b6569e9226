//! Server administration: DBSIZE FLUSHDB FLUSHALL SWAPDB TIME LASTSAVE SHUTDOWN DEBUG INFO.

use crate::commands::info;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "server",
    ..Command::DEFAULT
};

pub const COMMANDS: &[Command] = &[
    Command {
        name: "dbsize",
        arity: 1,
        flags: READONLY | FAST | ALL_SHARDS,
        summary: "Returns the number of keys in the database.",
        since: "1.0.0",
        handler: dbsize,
        ..FAMILY
    },
    Command {
        name: "flushdb",
        arity: -1,
        flags: WRITE | ALL_SHARDS,
        summary: "Removes all keys from the current database.",
        since: "1.0.0",
        handler: flushdb,
        ..FAMILY
    },
    Command {
        name: "flushall",
        arity: -1,
        flags: WRITE | ALL_SHARDS,
        summary: "Removes all keys from all databases.",
        since: "1.0.0",
        handler: flushall,
        ..FAMILY
    },
    Command {
        name: "swapdb",
        arity: 3,
        flags: WRITE | FAST | ALL_SHARDS,
        summary: "Swaps two Redis databases.",
        since: "4.0.0",
        handler: swapdb,
        ..FAMILY
    },
    Command {
        name: "time",
        arity: 1,
        flags: LOADING | STALE | FAST,
        summary: "Returns the server time.",
        since: "2.6.0",
        handler: time,
        ..FAMILY
    },
    Command {
        name: "shutdown",
        arity: -1,
        flags: ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY,
        summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        since: "1.0.0",
        handler: shutdown,
        ..FAMILY
    },
    Command {
        name: "info",
        arity: -1,
        flags: LOADING | STALE,
        summary: "Returns information and statistics about the server.",
        since: "1.0.0",
        handler: info_cmd,
        ..FAMILY
    },
    Command {
        name: "debug",
        arity: -2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "A container for debugging commands.",
        since: "1.0.0",
        handler: super::container,
        subcommands: DEBUG,
        ..FAMILY
    },
];

const DEBUG: &[Command] = &[
    Command {
        name: "sleep",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Blocks the worker thread for the given number of seconds (a float).",
        since: "1.0.0",
        handler: debug_sleep,
        ..FAMILY
    },
    Command {
        name: "object",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        keys: Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
        summary: "Shows low-level information about a key.",
        since: "1.0.0",
        handler: debug_object,
        ..FAMILY
    },
    Command {
        name: "set-active-expire",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Turns the active expiry cycle on (1) or off (0).",
        since: "1.0.0",
        handler: debug_set_active_expire,
        ..FAMILY
    },
    Command {
        name: "pause-cron",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Stops (1) or resumes (0) the background cycle: expiry, client timeouts, the tracking table's limit.",
        since: "7.0.0",
        handler: debug_pause_cron,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
        since: "1.0.0",
        handler: debug_help,
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

/// Frees flushed tables on a background thread when asked to (ASYNC), else right here.
fn dispose<T: Send + 'static>(garbage: T, in_background: bool) {
    if in_background {
        crate::services::lazyfree::free_later(garbage);
    }
}

fn flushdb(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = flush_mode(ctx)?;
    touch_watched(ctx, &[ctx.client.db]);
    let tracked = ctx.invalidate_all();
    dispose((ctx.db().flush(), tracked), lazy);
    // XREADGROUP clients blocked on a stream that went answer an error.
    ctx.signal_db_ready(ctx.client.db);
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = flush_mode(ctx)?;
    let all: Vec<usize> = (0..ctx.keyspace().db_count()).collect();
    touch_watched(ctx, &all);
    let tracked = ctx.invalidate_all();
    dispose((ctx.keyspace().flush_all(), tracked), lazy);
    for db in all {
        ctx.signal_db_ready(db);
    }
    ctx.out.ok();
    Ok(())
}

/// Before FLUSHDB, FLUSHALL or SWAPDB changes databases `dbs`: fails the EXEC of every
/// client watching a key of those databases that exists in one of them (as Redis does).
fn touch_watched(ctx: &Ctx<'_>, dbs: &[usize]) {
    let w = &ctx.watches();
    let exists = |db: usize, k: &[u8]| ctx.keyspace().db(db).lock1(k).contains(k);
    let hit: Vec<_> = dbs
        .iter()
        .flat_map(|d| w.keys_in(Some(*d)))
        .filter(|(_, k)| dbs.iter().any(|d| exists(*d, k)))
        .collect();
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
    touch_watched(ctx, &[a as usize, b as usize]);
    ctx.keyspace().swap(a as usize, b as usize);
    // Clients blocked in either database may find their keys there now.
    ctx.signal_db_ready(a as usize);
    ctx.signal_db_ready(b as usize);
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

fn shutdown(ctx: &mut Ctx<'_>) -> CmdResult {
    for i in 1..ctx.argv.len() {
        match ctx.lower(i).as_slice() {
            b"nosave" | b"save" | b"now" | b"force" => {}
            b"abort" => return Err(CmdError::err("No shutdown in progress.")),
            _ => return Err(CmdError::SYNTAX),
        }
    }
    tracing::warn!("User requested shutdown...");
    let words: Vec<Vec<u8>> = (1..ctx.argv.len()).map(|i| ctx.lower(i)).collect();
    let has = |w: &[u8]| words.iter().any(|x| x == w);
    if !has(b"nosave") {
        if let Some(server) = ctx.server().arc() {
            if let Err(e) = crate::services::snapshot::on_shutdown(&server, has(b"save")) {
                tracing::warn!("shutdown snapshot failed: {e}");
                if !has(b"force") {
                    return Err(CmdError::err("Errors trying to SHUTDOWN. Check logs."));
                }
            }
        }
    }
    // Like Redis, the caller gets no reply.
    ctx.server().stop();
    ctx.client.close_after_reply = true;
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

fn debug_sleep(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis parses with strtod and treats junk as 0.
    let secs: f64 = std::str::from_utf8(ctx.arg(2))
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    if secs.is_finite() && secs > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(secs.min(3600.0)));
    }
    ctx.out.ok();
    Ok(())
}

fn debug_object(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(2);
    let mut l = ctx.lock1(key);
    let now = l.now();
    let Some(e) = l.peek(key) else {
        return Err(CmdError::NO_SUCH_KEY);
    };
    let idle = strata_engine::clock::idle_ms(e.lru(), now) / 1000;
    let len = e.as_str().map(<[u8]>::len).unwrap_or(0);
    let text = format!(
        "Value at:{:p} refcount:1 encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        e.key().as_ptr(),
        e.encoding(),
        len,
        e.lru(),
        idle
    );
    drop(l);
    ctx.out.simple(&text);
    Ok(())
}

fn debug_set_active_expire(ctx: &mut Ctx<'_>) -> CmdResult {
    let on = ctx.int_arg(2)? != 0;
    ctx.server().active_expire.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn debug_pause_cron(ctx: &mut Ctx<'_>) -> CmdResult {
    let on = ctx.int_arg(2)? != 0;
    ctx.server().cron_paused.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn debug_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "DEBUG", DEBUG)
}
