//! DEBUG: the hooks Redis's test suite and operators use, with Redis 7.0's subcommands and
//! replies. Refused unless `enable-debug-command` allows the client (the PROTECTED flag).
//! The declarations and the small switches are here; digests in `digest.rs`, DEBUG
//! PROTOCOL in `protocol.rs`, what reads or rebuilds the data set (RELOAD, POPULATE,
//! OBJECT...) in `data.rs`.

mod data;
mod digest;
mod protocol;

use crate::commands::wrong_subcommand_args;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use crate::services::debug::{PACKED_THRESHOLD_DEFAULT, PEAK_RESET_DEFAULT_MS};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    flags: ADMIN | NOSCRIPT | LOADING | STALE | PROTECTED,
    group: "server",
    ..Command::DEFAULT
};

/// A subcommand's key argument (OBJECT, LISTPACK...).
const KEY2: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};

pub const COMMANDS: &[Command] = &[Command {
    name: "debug",
    arity: -2,
    flags: ADMIN | NOSCRIPT | LOADING | STALE | PROTECTED | OPAQUE,
    summary: "A container for debugging commands.",
    since: "1.0.0",
    handler: super::container,
    subcommands: SUBCOMMANDS,
    ..FAMILY
}];

const SUBCOMMANDS: &[Command] = &[
    Command {
        name: "change-repl-id",
        arity: 2,
        summary: "Changes the replication IDs of the instance.",
        handler: change_repl_id,
        ..FAMILY
    },
    Command {
        name: "digest",
        arity: 2,
        summary: "Outputs a hex signature of the whole data set (40 zeros when empty).",
        handler: digest::digest,
        ..FAMILY
    },
    Command {
        name: "digest-value",
        arity: -2,
        keys: Keys::Range {
            first: 2,
            last: -1,
            step: 1,
        },
        summary: "Outputs a hex signature of the values of the keys given.",
        handler: digest::digest_value,
        ..FAMILY
    },
    Command {
        name: "error",
        arity: 3,
        summary: "Replies with an error holding the string given.",
        handler: error,
        ..FAMILY
    },
    Command {
        name: "replicate",
        arity: -3,
        summary: "Sends a command to the replicas only, without running it here.",
        handler: replicate,
        ..FAMILY
    },
    Command {
        name: "log",
        arity: 3,
        summary: "Writes the message given to the server log.",
        handler: log,
        ..FAMILY
    },
    Command {
        name: "htstats",
        arity: 3,
        summary: "Shows statistics of a database's hash tables.",
        handler: data::htstats,
        ..FAMILY
    },
    Command {
        name: "htstats-key",
        arity: 3,
        keys: KEY2,
        summary: "Shows statistics of the hash table holding a key's value.",
        handler: data::htstats_key,
        ..FAMILY
    },
    Command {
        name: "listpack",
        arity: 3,
        keys: KEY2,
        summary: "Logs the listpack of a listpack-encoded value.",
        handler: data::listpack,
        ..FAMILY
    },
    Command {
        name: "quicklist",
        arity: -3,
        keys: KEY2,
        summary: "Logs the nodes of a list (an optional 0|1 asks for more detail).",
        handler: data::quicklist,
        ..FAMILY
    },
    Command {
        name: "object",
        arity: 3,
        keys: KEY2,
        summary: "Shows low-level information about a key and its value.",
        handler: data::object,
        ..FAMILY
    },
    Command {
        name: "populate",
        arity: -3,
        summary: "Creates <count> string keys named <prefix>:<n> (prefix 'key'), of <size> bytes.",
        handler: data::populate,
        ..FAMILY
    },
    Command {
        name: "protocol",
        arity: 3,
        summary: "Replies with a test value of a type: string, integer, double, bignum, null, array, set, map, attrib, push, verbatim, true, false.",
        handler: protocol::protocol,
        ..FAMILY
    },
    Command {
        name: "reload",
        arity: -2,
        summary: "Saves a snapshot and loads it back (options: MERGE, NOFLUSH, NOSAVE).",
        handler: data::reload,
        ..FAMILY
    },
    Command {
        name: "loadaof",
        arity: 2,
        summary: "Loads the data set back as a restart would: the newest snapshot, then the journal after it.",
        handler: data::loadaof,
        ..FAMILY
    },
    Command {
        name: "sleep",
        arity: 3,
        summary: "Blocks the worker thread for <seconds> (decimals allowed); the replication link waits too.",
        handler: sleep,
        ..FAMILY
    },
    Command {
        name: "set-active-expire",
        arity: 3,
        summary: "Turns the active expiry cycle off (0) or on (1).",
        handler: set_active_expire,
        ..FAMILY
    },
    Command {
        name: "pause-cron",
        arity: 3,
        summary: "Stops (1) or resumes (0) the periodic background cycle.",
        handler: pause_cron,
        ..FAMILY
    },
    Command {
        name: "quicklist-packed-threshold",
        arity: 3,
        summary: "Sets the size from which list elements would get plain nodes (kept only).",
        handler: quicklist_packed_threshold,
        ..FAMILY
    },
    Command {
        name: "set-skip-checksum-validation",
        arity: 3,
        summary: "Skips (1) or checks (0) payload checksums on load.",
        handler: set_skip_checksum,
        ..FAMILY
    },
    Command {
        name: "set-disable-deny-scripts",
        arity: 3,
        summary: "Lets scripts call commands flagged noscript (1), or not (0).",
        handler: set_disable_deny_scripts,
        ..FAMILY
    },
    Command {
        name: "aof-flush-sleep",
        arity: 3,
        summary: "Sets a sleep before journal flushes, in microseconds (kept only).",
        handler: aof_flush_sleep,
        ..FAMILY
    },
    Command {
        name: "replybuffer",
        arity: 4,
        summary: "PEAK-RESET-TIME <never|reset|ms> or RESIZING <0|1> of reply buffers (kept only).",
        handler: replybuffer,
        ..FAMILY
    },
    Command {
        name: "stringmatch-test",
        arity: 2,
        summary: "Runs a fuzz test of the glob matcher.",
        handler: stringmatch_test,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE | PROTECTED,
        summary: "Returns helpful text about the different subcommands.",
        handler: help,
        ..FAMILY
    },
];

/// C's atoi, as Redis reads DEBUG's switches: optional blanks and sign, then digits up to
/// the first other byte; nothing numeric is 0.
fn atoi(s: &[u8]) -> i64 {
    let s = s.trim_ascii_start();
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0i64, |n, b| {
            n.wrapping_mul(10).wrapping_add(i64::from(b - b'0'))
        });
    if neg {
        n.wrapping_neg()
    } else {
        n
    }
}

/// Sets a switch from argv[2] read as atoi (non-zero: on) and answers OK.
fn switch(ctx: &mut Ctx<'_>, flag: &AtomicBool) -> CmdResult {
    flag.store(atoi(ctx.arg(2)) != 0, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn set_active_expire(ctx: &mut Ctx<'_>) -> CmdResult {
    switch(ctx, &ctx.server().active_expire)
}

fn pause_cron(ctx: &mut Ctx<'_>) -> CmdResult {
    switch(ctx, &ctx.server().debug.pause_cron)
}

fn set_skip_checksum(ctx: &mut Ctx<'_>) -> CmdResult {
    switch(ctx, &ctx.server().debug.skip_checksum)
}

fn set_disable_deny_scripts(ctx: &mut Ctx<'_>) -> CmdResult {
    switch(ctx, &ctx.server().debug.allow_noscript)
}

fn aof_flush_sleep(ctx: &mut Ctx<'_>) -> CmdResult {
    let us = atoi(ctx.arg(2)).max(0) as u64;
    ctx.server()
        .debug
        .aof_flush_sleep_us
        .store(us, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn sleep(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis parses with strtod and treats junk as 0.
    let secs: f64 = std::str::from_utf8(ctx.arg(2))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0.0);
    if secs.is_finite() && secs > 0.0 {
        let sleeping = &ctx.server().debug.sleeping;
        sleeping.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_secs_f64(secs.min(3600.0)));
        sleeping.fetch_sub(1, Ordering::SeqCst);
    }
    ctx.out.ok();
    Ok(())
}

fn log(ctx: &mut Ctx<'_>) -> CmdResult {
    tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(ctx.arg(2)));
    ctx.out.ok();
    Ok(())
}

/// An error reply of exactly the text given (its first word is the error code).
fn error(ctx: &mut Ctx<'_>) -> CmdResult {
    let text = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    ctx.out.error(&text);
    Ok(())
}

/// DEBUG REPLICATE command [arg ...]: the replicas get a command this server never ran
/// (Redis's test of what a replica does with one that fails: `propagation-error-behavior`).
fn replicate(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv: Vec<&[u8]> = ctx.argv[2..].iter().map(|a| &a[..]).collect();
    ctx.server().repl.backlog.feed_command(&argv);
    ctx.out.ok();
    Ok(())
}

fn change_repl_id(ctx: &mut Ctx<'_>) -> CmdResult {
    tracing::warn!("Changing replication IDs after receiving DEBUG change-repl-id");
    ctx.out.ok();
    Ok(())
}

/// The size argument of QUICKLIST-PACKED-THRESHOLD: a memory value from 0 (the default)
/// to just under 4 GiB, as Redis accepts it.
fn quicklist_packed_threshold(ctx: &mut Ctx<'_>) -> CmdResult {
    const MAX: u64 = (1 << 32) - (1 << 20);
    let text = String::from_utf8_lossy(ctx.arg(2));
    let size = crate::config::memtoull(&text)
        .filter(|&n| n <= MAX)
        .ok_or_else(|| {
            CmdError::err("argument must be a memory value bigger than 1 and smaller than 4gb")
        })?;
    let size = if size == 0 {
        PACKED_THRESHOLD_DEFAULT
    } else {
        size
    };
    ctx.server()
        .debug
        .packed_threshold
        .store(size, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn replybuffer(ctx: &mut Ctx<'_>) -> CmdResult {
    let sw = &ctx.server().debug;
    match ctx.lower(2).as_slice() {
        b"peak-reset-time" => {
            let ms = match ctx.lower(3).as_slice() {
                b"never" => -1,
                b"reset" => PEAK_RESET_DEFAULT_MS,
                _ => ctx.int_arg(3)?,
            };
            sw.reply_peak_reset_ms.store(ms, Ordering::Relaxed);
        }
        b"resizing" => sw
            .reply_resizing
            .store(atoi(ctx.arg(3)) != 0, Ordering::Relaxed),
        _ => return Err(wrong_subcommand_args(ctx)),
    }
    ctx.out.ok();
    Ok(())
}

/// Matches random patterns against random strings: the matcher must neither panic nor run
/// away, whatever they hold.
fn stringmatch_test(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut x = ctx.keyspace().random() | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    const ALPHABET: &[u8] = b"*?[]^-\\ab";
    for _ in 0..100_000 {
        let mut gen = |max: u64| -> Vec<u8> {
            let len = next() % max;
            (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect()
        };
        let (pattern, text) = (gen(32), gen(32));
        strata_engine::glob::matches(&pattern, &text, false);
    }
    ctx.out
        .simple("Apparently Strata did not crash: test passed");
    Ok(())
}

fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "DEBUG", SUBCOMMANDS)
}

#[cfg(test)]
mod tests {
    use super::atoi;

    #[test]
    fn atoi_reads_like_c() {
        for (s, n) in [
            (&b"1"[..], 1),
            (b"0", 0),
            (b"  42x", 42),
            (b"-7", -7),
            (b"+3", 3),
            (b"yes", 0),
            (b"", 0),
        ] {
            assert_eq!(atoi(s), n, "{:?}", String::from_utf8_lossy(s));
        }
    }
}
