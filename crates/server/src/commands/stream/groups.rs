//! XGROUP (CREATE SETID DESTROY CREATECONSUMER DELCONSUMER HELP), XACK, XPENDING.

use super::{no_group, parse_id, parse_strict_ids, reply_id, stream_err};
use crate::commands::{help_text, wrong_subcommand_args};
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::stream::StreamId;
use strata_engine::StreamValue;

/// The options after `XGROUP <sub> key group id`: MKSTREAM (CREATE) and ENTRIESREAD
/// (CREATE, SETID; -1 or absent: unknown).
struct GroupOpts {
    mkstream: bool,
    entries_read: Option<i64>,
}

fn group_opts(ctx: &Ctx<'_>, create: bool, setid: bool) -> Result<GroupOpts, CmdError> {
    let argv = ctx.argv;
    let mut o = GroupOpts {
        mkstream: false,
        entries_read: None,
    };
    let mut i = 5;
    while i < argv.len() {
        match ctx.lower(i).as_slice() {
            b"mkstream" if create => {
                o.mkstream = true;
                i += 1;
            }
            b"entriesread" if (create || setid) && i + 1 < argv.len() => {
                let n = parse_i64(&argv[i + 1]).ok_or(CmdError::NOT_INTEGER)?;
                if n < -1 {
                    return Err(CmdError::Static(
                        "ERR value for ENTRIESREAD must be positive or -1",
                    ));
                }
                o.entries_read = (n >= 0).then_some(n);
                i += 2;
            }
            _ => return Err(wrong_subcommand_args(ctx)),
        }
    }
    Ok(o)
}

/// The checks every XGROUP subcommand but HELP makes, in Redis's order: the key must
/// exist (unless MKSTREAM) and hold a stream, and the group must exist for all but
/// CREATE and DESTROY.
fn check(ctx: &Ctx<'_>, s: Option<&StreamValue>, mkstream: bool, need_group: bool) -> CmdResult {
    if mkstream {
        return Ok(());
    }
    let Some(s) = s else {
        return Err(CmdError::Static("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."));
    };
    if need_group && s.group(ctx.arg(3)).is_none() {
        return Err(CmdError::Custom(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(ctx.arg(3)),
            String::from_utf8_lossy(ctx.arg(2))
        )));
    }
    Ok(())
}

/// `$` (the stream's last ID; 0-0 without a stream) or an ID.
fn group_id(arg: &[u8], s: Option<&StreamValue>, strict: bool) -> Result<StreamId, CmdError> {
    match arg {
        b"$" => Ok(s.map_or(StreamId::MIN, |s| s.last_id())),
        _ => parse_id(arg, 0, strict),
    }
}

pub(super) fn create(ctx: &mut Ctx<'_>) -> CmdResult {
    let o = group_opts(ctx, true, false)?;
    let (key, group) = (ctx.arg(2), ctx.arg(3));
    let mut l = ctx.lock1(key);
    let s = l.stream_peek(key)?;
    check(ctx, s, o.mkstream, false)?;
    if ctx.argv.len() > 8 {
        return Err(wrong_subcommand_args(ctx));
    }
    let id = group_id(ctx.arg(4), s, true)?;
    let s = l.stream_mut_or_create(key)?;
    s.create_group(group, id, o.entries_read)
        .map_err(stream_err)?;
    drop(l);
    ctx.notify(notify::STREAM, "xgroup-create", key);
    ctx.out.ok();
    Ok(())
}

pub(super) fn setid(ctx: &mut Ctx<'_>) -> CmdResult {
    let o = group_opts(ctx, false, true)?;
    let (key, group) = (ctx.arg(2), ctx.arg(3));
    let mut l = ctx.lock1(key);
    let s = l.stream_peek(key)?;
    check(ctx, s, false, true)?;
    if !matches!(ctx.argv.len(), 5 | 7) {
        return Err(wrong_subcommand_args(ctx));
    }
    let id = group_id(ctx.arg(4), s, false)?;
    if let Some(s) = l.stream_mut(key)? {
        s.set_group_id(group, id, o.entries_read);
    }
    drop(l);
    ctx.notify(notify::STREAM, "xgroup-setid", key);
    ctx.out.ok();
    Ok(())
}

pub(super) fn destroy(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, group) = (ctx.arg(2), ctx.arg(3));
    let mut l = ctx.lock1(key);
    check(ctx, l.stream_peek(key)?, false, false)?;
    let destroyed = l.stream_mut(key)?.is_some_and(|s| s.destroy_group(group));
    drop(l);
    if destroyed {
        ctx.notify(notify::STREAM, "xgroup-destroy", key);
        // Clients blocked reading with this group get NOGROUP.
        ctx.signal_key_ready(key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(destroyed as i64);
    Ok(())
}

pub(super) fn createconsumer(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, group, consumer) = (ctx.arg(2), ctx.arg(3), ctx.arg(4));
    let now = ctx.clock_ms();
    let mut l = ctx.lock1(key);
    check(ctx, l.stream_peek(key)?, false, true)?;
    let created = l
        .stream_mut(key)?
        .and_then(|s| s.create_consumer(group, consumer, now))
        .unwrap_or(false);
    drop(l);
    if created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(created as i64);
    Ok(())
}

pub(super) fn delconsumer(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, group, consumer) = (ctx.arg(2), ctx.arg(3), ctx.arg(4));
    let mut l = ctx.lock1(key);
    let s = l.stream_peek(key)?;
    check(ctx, s, false, true)?;
    let exists = s
        .and_then(|s| s.group(group))
        .is_some_and(|g| g.consumer(consumer).is_some());
    let pending = match l.stream_mut(key)? {
        Some(s) if exists => s.delete_consumer(group, consumer).unwrap_or(0),
        _ => 0,
    };
    drop(l);
    if exists {
        ctx.notify(notify::STREAM, "xgroup-delconsumer", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(pending as i64);
    Ok(())
}

pub(super) fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ];
    help_text(ctx, LINES)
}

pub(super) fn xack(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, group) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock1(key);
    let has_group = l.stream_get(key)?.is_some_and(|s| s.group(group).is_some());
    let acked = match l.stream_mut(key)? {
        // The IDs must all parse before anything is acknowledged.
        Some(s) if has_group => s.ack(group, &parse_strict_ids(&ctx.argv[3..])?),
        _ => 0,
    };
    drop(l);
    if acked == 0 {
        ctx.no_effect();
    }
    ctx.out.int(acked as i64);
    Ok(())
}

pub(super) fn xpending(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let argc = argv.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::SYNTAX);
    }
    // The range, parsed before the key is looked up so syntax errors come first.
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if ctx.lower(3) == b"idle" {
            min_idle = parse_i64(&argv[4]).ok_or(CmdError::NOT_INTEGER)?;
            if argc < 8 {
                return Err(CmdError::SYNTAX);
            }
            at += 2;
        }
        let count = parse_i64(&argv[at + 2])
            .ok_or(CmdError::NOT_INTEGER)?
            .max(0);
        let lo = StreamId::parse_bound(&argv[at], 0, true).map_err(stream_err)?;
        let hi = StreamId::parse_bound(&argv[at + 1], u64::MAX, false).map_err(stream_err)?;
        let consumer = argv.get(at + 3).map(|c| &c[..]);
        range = Some((lo, hi, count, consumer, min_idle));
    }
    let (key, group) = (ctx.arg(1), ctx.arg(2));
    let now = ctx.now_ms;
    let mut l = ctx.lock1(key);
    let Some(g) = l.stream_get(key)?.and_then(|s| s.group(group)) else {
        return Err(no_group(key, group, ""));
    };
    let out = &mut ctx.out;
    let Some((lo, hi, count, consumer, min_idle)) = range else {
        let sum = g.pending_summary();
        out.array(4);
        out.int(sum.count as i64);
        match sum.bounds {
            None => {
                out.null();
                out.null();
                out.null_array();
            }
            Some((first, last)) => {
                reply_id(out, first);
                reply_id(out, last);
                out.array(sum.consumers.len());
                for (name, n) in &sum.consumers {
                    out.array(2);
                    out.bulk(name);
                    out.bulk_int(*n as i64);
                }
            }
        }
        return Ok(());
    };
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let list = g.pending_extended(lo, hi, count, consumer, min_idle, now);
    out.array(list.len());
    for p in list {
        out.array(4);
        reply_id(out, p.id);
        out.bulk(p.consumer);
        out.int((now as i64).wrapping_sub(p.delivery_time).max(0));
        out.int(p.delivery_count as i64);
    }
    Ok(())
}
