//! Server administration: DBSIZE FLUSHDB FLUSHALL SWAPDB TIME LASTSAVE SHUTDOWN DEBUG INFO.

use crate::commands::info;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command, Ctx, Keys};
use std::sync::atomic::Ordering;
use std::time::Duration;

const fn admin(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::exec::command::Handler,
) -> Command {
    Command::new(name, arity, flags, "server", summary, since, handler)
}

pub const COMMANDS: &[Command] = &[
    admin(
        "dbsize",
        1,
        READONLY | FAST,
        "Returns the number of keys in the database.",
        "1.0.0",
        dbsize,
    ),
    admin(
        "flushdb",
        -1,
        WRITE,
        "Removes all keys from the current database.",
        "1.0.0",
        flushdb,
    ),
    admin(
        "flushall",
        -1,
        WRITE,
        "Removes all keys from all databases.",
        "1.0.0",
        flushall,
    ),
    admin(
        "swapdb",
        3,
        WRITE | FAST,
        "Swaps two Redis databases.",
        "4.0.0",
        swapdb,
    ),
    admin(
        "time",
        1,
        LOADING | STALE | FAST,
        "Returns the server time.",
        "2.6.0",
        time,
    ),
    admin(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY,
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        "1.0.0",
        shutdown,
    ),
    admin(
        "info",
        -1,
        LOADING | STALE,
        "Returns information and statistics about the server.",
        "1.0.0",
        info_cmd,
    ),
    Command {
        subcommands: DEBUG,
        ..admin(
            "debug",
            -2,
            ADMIN | NOSCRIPT | LOADING | STALE,
            "A container for debugging commands.",
            "1.0.0",
            super::container,
        )
    },
];

const DEBUG: &[Command] = &[
    admin(
        "sleep",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Blocks the worker thread for the given number of seconds (a float).",
        "1.0.0",
        debug_sleep,
    ),
    Command {
        keys: Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
        ..admin(
            "object",
            3,
            ADMIN | NOSCRIPT | LOADING | STALE,
            "Shows low-level information about a key.",
            "1.0.0",
            debug_object,
        )
    },
    admin(
        "set-active-expire",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Turns the active expiry cycle on (1) or off (0).",
        "1.0.0",
        debug_set_active_expire,
    ),
    admin(
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "1.0.0",
        debug_help,
    ),
];

fn dbsize(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.db().len() as i64);
    Ok(())
}

/// FLUSHDB/FLUSHALL's optional ASYNC|SYNC; the default follows lazyfree-lazy-user-flush.
fn flush_mode(ctx: &Ctx<'_>) -> Result<bool, CmdError> {
    match ctx.argv.len() {
        1 => Ok(ctx.server.config.get_bool("lazyfree-lazy-user-flush")),
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
    dispose(ctx.db().flush(), lazy);
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>) -> CmdResult {
    let lazy = flush_mode(ctx)?;
    let all: Vec<usize> = (0..ctx.server.keyspace.db_count()).collect();
    touch_watched(ctx, &all);
    dispose(ctx.server.keyspace.flush_all(), lazy);
    ctx.out.ok();
    Ok(())
}

/// Before FLUSHDB, FLUSHALL or SWAPDB changes databases `dbs`: fails the EXEC of every
/// client watching a key of those databases that exists in one of them (as Redis does).
fn touch_watched(ctx: &Ctx<'_>, dbs: &[usize]) {
    let w = &ctx.server.watches;
    let exists = |db: usize, k: &[u8]| ctx.server.keyspace.db(db).lock1(k).contains(k);
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
    let n = ctx.server.keyspace.db_count() as i64;
    if !(0..n).contains(&a) || !(0..n).contains(&b) {
        return Err(CmdError::DB_RANGE);
    }
    touch_watched(ctx, &[a as usize, b as usize]);
    ctx.server.keyspace.swap(a as usize, b as usize);
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
        if let Some(server) = ctx.server.arc() {
            if let Err(e) = crate::services::snapshot::on_shutdown(&server, has(b"save")) {
                tracing::warn!("shutdown snapshot failed: {e}");
                if !has(b"force") {
                    return Err(CmdError::err("Errors trying to SHUTDOWN. Check logs."));
                }
            }
        }
    }
    // Like Redis, the caller gets no reply.
    ctx.server.stop();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn info_cmd(ctx: &mut Ctx<'_>) -> CmdResult {
    let sections: Vec<String> = ctx.argv[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let text = info::render(ctx.server, &sections);
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
    ctx.server.active_expire.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn debug_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "DEBUG", DEBUG)
}
